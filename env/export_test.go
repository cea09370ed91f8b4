package env

// SolvPaperSuite is solvPaperSuite for the external tests (package env_test).
var SolvPaperSuite = solvPaperSuite
