package experiment

import "errors"

// ErrOptions marks Options that Run cannot start with (see Options).
var ErrOptions = errors.New("experiment: Options need a Dir, NewPolicy, arms and seeds")
