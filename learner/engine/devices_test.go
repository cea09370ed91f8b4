package engine

import (
	"errors"
	"fmt"
	"testing"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
)

func TestDevicesAccepted(t *testing.T) {
	for _, tc := range []struct {
		list, device string
		ranks        string
	}{
		{"", "", "[cpu]"},
		{"", "cuda:1", "[cuda:1]"},
		{"cpu", "", "[cpu]"},
		{"cpu,cpu", "cpu", "[cpu cpu]"},
		{" cpu , cpu ", "", "[cpu cpu]"},
		{"cuda", "cpu", "[cuda]"},
		{"cuda:0,cuda:1,cuda:3", "", "[cuda:0 cuda:1 cuda:3]"},
		{"cuda:2", "cuda:2", "[cuda:2]"},
	} {
		ds, err := ParseDevices(tc.list)
		if err != nil {
			t.Errorf("ParseDevices(%q): %v", tc.list, err)
			continue
		}
		s := Spec{Kind: Torch, Device: tc.device, Devices: ds}
		if err := s.Validate(); err != nil {
			t.Errorf("--devices %q --device %q: %v", tc.list, tc.device, err)
		}
		if got := fmt.Sprint(s.Ranks()); got != tc.ranks {
			t.Errorf("--devices %q --device %q: ranks %s, want %s", tc.list, tc.device, got, tc.ranks)
		}
		if one := s.Single(); len(one.Devices) != 0 || one.Ranks()[0] != s.Ranks()[0] {
			t.Errorf("--devices %q: Single() = %+v", tc.list, one)
		}
	}
}

func TestDevicesRefused(t *testing.T) {
	for _, tc := range []struct {
		kind, list, device, field string
	}{
		{Torch, ",", "", "devices"},
		{Torch, "cpu,gpu", "", "devices"},
		{Torch, "cuda:-1", "", "devices"},
		{Torch, "cuda:0,cpu", "", "devices"},
		{Torch, "cuda:1,cuda:1", "", "devices"},
		{Torch, "cuda,cuda", "", "devices"},
		{GoMLX, "cpu,cpu", "", "devices"},
		{"", "cpu", "", "devices"},
		{Torch, "cpu,cpu", "cuda:0", "device"},
		{Torch, "cuda:0,cuda:1", "cuda:0", "device"},
		{Torch, "cuda:1", "cuda:0", "device"},
	} {
		f := Flags{Kind: tc.kind, Devices: tc.list}
		_, err := f.Spec(tc.device, nil)
		var ce *fielderr.Error
		if !errors.As(err, &ce) || ce.Field != tc.field || !errors.Is(err, learner.ErrInvalidConfig) {
			t.Errorf("--engine %q --devices %q --device %q: %v, want a *fielderr.Error on %s", tc.kind, tc.list, tc.device, err, tc.field)
		}
	}
}
