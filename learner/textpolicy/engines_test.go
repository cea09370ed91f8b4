package textpolicy

// The tests open models through engine.Open: link both engines.
import _ "github.com/t2t-lab/t2t/learner/engines"
