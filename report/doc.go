// Package report renders the results of t2t evaluations and experiments as
// the paper's tables and plots: Markdown, CSV, JSON, standalone SVG charts
// and a self-contained HTML page (inline CSS and inline SVG, no external
// assets, no scripts).
//
// Two result shapes go in:
//
//   - Eval: one policy on one benchmark suite. Tally folds per-instance
//     Outcome values into cells per (agents, map size), per (agents,
//     wait-ratio subset) and per agent count; EvalMarkdown, EvalCSV,
//     EvalJSON, EvalSizeSVG, EvalFailureSVG and EvalHTML render it.
//   - Experiment: several engineer strategies, each trained with several
//     seeds, with the evaluation after every stage, the config each stage
//     used and the engineer's audited rationale. Summarize computes mean ±
//     spread over seeds; ExperimentMarkdown, ExperimentCSV, SummaryCSV,
//     ExperimentJSON and ExperimentHTML render it.
//
// Every function is pure and deterministic: no I/O, no clocks, maps are
// walked in sorted order and numbers are printed with fixed precision, so
// the same input gives byte-identical output (the tests compare golden
// files). Rates are shown in percent with one decimal.
//
// Concurrency: the functions share no state and may be called
// concurrently; they do not modify their inputs.
//
// Errors: only the JSON functions return errors (from encoding/json);
// ParseEvalJSON and ParseExperimentJSON wrap ErrFormat for documents that
// are not reports.
package report
