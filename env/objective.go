package env

// Objective selects the cost that optimality and rewards are judged by.
type Objective uint8

// The two objectives. SumOfCosts is the default.
const (
	SumOfCosts Objective = iota
	MakespanObjective
)

func (o Objective) String() string {
	if o == MakespanObjective {
		return "makespan"
	}
	return "soc"
}

// ParseObjective reads "soc" (or "sum-of-costs") and "makespan".
func ParseObjective(s string) (Objective, error) {
	switch s {
	case "soc", "sum-of-costs", "":
		return SumOfCosts, nil
	case "makespan":
		return MakespanObjective, nil
	}
	return 0, &FieldError{Field: "objective", Value: s, Reason: `want "soc" or "makespan"`}
}

// Optimum returns the instance's optimal cost under o.
func (in *Instance) Optimum(o Objective) int {
	if o == MakespanObjective {
		return in.Makespan
	}
	return in.SOC
}
