package engine

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
)

// DevicesHelp describes the --devices flag of the commands that train.
const DevicesHelp = "torch engine: one worker process per device, the ranks of one torch.distributed group that trains as one model\n" +
	"(each rank steps on its share of a batch's rows; gradients are summed over the ranks, so the step equals one rank's on the whole batch):\n" +
	"cpu,cpu (two gloo ranks on the CPU) or cuda:0,cuda:1,... (NCCL ranks, one per GPU); default: one worker on --device"

// ParseDevices splits a --devices list ("cpu,cpu", "cuda:0,cuda:1"); "" is no list. Each item is
// checked by CheckDevices.
func ParseDevices(list string) ([]string, error) {
	if list == "" {
		return nil, nil
	}
	ds := strings.Split(list, ",")
	for i := range ds {
		ds[i] = strings.TrimSpace(ds[i])
	}
	if err := CheckDevices(ds); err != nil {
		return nil, err
	}
	return ds, nil
}

// CheckDevices checks a list of torch ranks' devices: each "cpu", "cuda" (a list of one) or
// "cuda:N"; all on the CPU or all on GPUs (gloo or NCCL, not both); no GPU twice (NCCL runs one
// rank per GPU). The error is a *fielderr.Error on field (and flag) "devices".
func CheckDevices(ds []string) error {
	bad := func(reason string) error {
		return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "devices", Flag: "devices", Value: strings.Join(ds, ","), Reason: reason}
	}
	if len(ds) == 0 {
		return bad("no devices")
	}
	seen := map[string]bool{}
	var cpu, cuda int
	for i, d := range ds {
		switch {
		case d == "":
			return bad(fmt.Sprintf("item %d is empty", i+1))
		case d == "cpu":
			cpu++
			continue
		case d == "cuda" && len(ds) == 1:
		case strings.HasPrefix(d, "cuda:"):
			if n, err := strconv.Atoi(d[len("cuda:"):]); err != nil || n < 0 {
				return bad(fmt.Sprintf("%q: want cuda:N with N ≥ 0", d))
			}
		case d == "cuda":
			return bad(`"cuda" in a list: name each GPU, cuda:0,cuda:1,...`)
		default:
			return bad(fmt.Sprintf(`unknown device %q: want cpu or cuda:N`, d))
		}
		cuda++
		if seen[d] {
			return bad(fmt.Sprintf("%s twice: one rank per GPU", d))
		}
		seen[d] = true
	}
	if cpu > 0 && cuda > 0 {
		return bad("mixes cpu and cuda: the ranks are all gloo (cpu) or all NCCL (cuda:N)")
	}
	return nil
}

// Ranks lists the devices of the torch engine's ranks: Devices, or the one Device ("cpu" when
// empty).
func (s Spec) Ranks() []string {
	if len(s.Devices) > 0 {
		return s.Devices
	}
	if s.Device == "" {
		return []string{"cpu"}
	}
	return []string{s.Device}
}

// Single is s on one worker: the first of its Devices (for a model that only samples, beside
// a policy trained on the ranks).
func (s Spec) Single() Spec {
	if len(s.Devices) > 0 {
		s.Device, s.Devices = s.Devices[0], nil
	}
	return s
}

// validateDevices checks Devices against the engine and Device: only the torch engine has
// ranks, and Device must then be unset, the default "cpu", or the one device of Devices.
func (s Spec) validateDevices() error {
	if len(s.Devices) == 0 {
		return nil
	}
	if s.kind() != Torch {
		return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "devices", Flag: "devices", Value: strings.Join(s.Devices, ","), Reason: "only the torch engine runs ranks on several devices (--engine torch)"}
	}
	if err := CheckDevices(s.Devices); err != nil {
		return err
	}
	if s.Device != "" && s.Device != "cpu" && (len(s.Devices) != 1 || s.Devices[0] != s.Device) {
		return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "device", Flag: "device", Value: s.Device, Reason: fmt.Sprintf("disagrees with --devices %s: give --devices alone", strings.Join(s.Devices, ","))}
	}
	return nil
}
