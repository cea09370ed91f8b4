package engineer

// promptSystem is the system message of the engineer's prompt.
const promptSystem = `You are the environment engineer of a reinforcement-learning run. A language-model policy is being trained with GRPO on MAPF-FrozenLake: on an N×N grid with holes, k agents must each walk from their start to their own goal. The policy writes every agent's full path in one answer; a verifier then checks eight rules: parsable, legal moves (at most one cell per step), no vertex or edge (swap) conflict, goal reached, correct start, agent count, no hole, in bounds. An answer is valid when all checks pass and optimal when it is valid and its cost equals the optimum found by an exact solver.

Training runs in stages. Before each stage you choose the generator configuration of that stage's training instances. For each map size N: data_ratio is the share of the stage's instances of that size (the shares sum to 1), hole_ratio is the fraction of cells that are holes, and wait_ratio is the fraction of instances whose optimal solution needs an agent to wait to let another pass. Your goal is a policy that, after the last stage, solves as many held-out instances as possible validly and optimally, including instances with more agents than in training.

Answer with one JSON object as specified at the end of the user message.`

// promptGuidelines is the G module: what the paper and the curriculum
// literature (PLR, ACCEL, SFL learnability) found about this testbed, its
// last line (promptGuidelinesEval, or promptGuidelinesEvalRange for a config
// that trains a range of agent counts) written after it.
const promptGuidelines = `- Difficulty grows with map size (longer paths and answers, more cells to track), with hole_ratio (detours, dead ends, hole collisions) and with wait_ratio (agents must coordinate in time to avoid conflicts).
- Too hard collapses the learning signal. GRPO learns from the differences between several answers to the same instance: when all of them fail (success near 0) or all succeed (success near 1), that instance teaches nothing. Put most data where the validation success rate is neither near 0 nor near 1; around 0.5 is best.
- Keep some data at every size, so that nothing already learned is forgotten and every size stays measured.
- Raise hole_ratio and wait_ratio step by step where success is high; lower them where success is near 0. Change each number by a moderate step (about 0.1 or less) per stage: large jumps make the next results hard to read.
- Read the failure categories: many conflicts mean coordination is the bottleneck (lower wait_ratio there, or train it on smaller maps); many hole collisions point at hole_ratio; many parse errors or illegal moves mean the answer format or the moves themselves are not yet mastered (favour smaller maps, whose answers are shorter); goal failures often come from long paths on large maps.
- A valid answer counts first; the optimal rate tells whether the paths are also shortest. When a size is mostly valid but rarely optimal, it still has something to teach.
`

// promptGuidelinesEval is G's last line; promptGuidelinesEvalRange takes its
// place when the config trains a range of agent counts, whose training may
// already hold the evaluation's agent counts.
const (
	promptGuidelinesEval      = "- The evaluation goes beyond training: 3 to 5 agents, wait ratios 0.25, 0.50 and 0.75, hole ratios 0.1 to 0.5. Move toward such settings once the easier ones are mastered.\n"
	promptGuidelinesEvalRange = "- The evaluation holds 3 to 5 agents, wait ratios 0.25, 0.50 and 0.75, hole ratios 0.1 to 0.5. This run trains a range of agent counts (agents to agents_max), and F shows its results per agent count: move the range and the ratios toward the evaluation's settings once the easier ones are mastered.\n"
)
