package bench

// The tests build models through engine.Open and gridnet.New: link every engine.
import _ "github.com/t2t-lab/t2t/learner/engines"
