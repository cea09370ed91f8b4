package tokenizer

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse: a tokenizer.json never panics Parse nor allocates by a huge
// token id (MaxTokenID); a refusal is a *FormatError; a tokenizer it
// builds encodes any text to ids of its vocabulary and decodes them.
func FuzzParse(f *testing.F) {
	f.Add(tokTinyJSON(f, [][2]string{{"Ġ", "Ġ"}, {"a", "b"}}, false, tokSpecials(), nil), "hello <|im_end|> world")
	f.Add(tokTinyJSON(f, [][2]string{{"a", "b"}, {"ab", "c"}}, true, nil, map[string]any{"normalizer": nil}), "abc abc\xff")
	f.Add(tokTinyJSON(f, nil, false, []map[string]any{{"content": "X", "id": 7, "special": true}}, nil), "aXb")
	tiny := string(tokTinyJSON(f, nil, false, nil, nil))
	f.Add([]byte(strings.Replace(tiny, `"vocab":{`, `"vocab":{"zz":2147483647,`, 1)), "zz")
	f.Add([]byte(strings.Replace(tiny, `"added_tokens":null`, `"added_tokens":[{"content":"Q","id":2000000000}]`, 1)), "Q")
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0}},"pre_tokenizer":{"type":"ByteLevel"}}`), "a b")
	f.Add([]byte(`{}`), "")
	f.Fuzz(func(t *testing.T, js []byte, text string) {
		tok, err := Parse(js)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || err.Error() == "" {
				t.Fatalf("error %v, want a *FormatError", err)
			}
			return
		}
		if tok.VocabSize() > MaxTokenID+1 {
			t.Fatalf("vocabulary of %d", tok.VocabSize())
		}
		if len(text) > 256 {
			text = text[:256]
		}
		ids := tok.Encode(text)
		for _, id := range ids {
			if id < 0 || int(id) >= tok.VocabSize() {
				t.Fatalf("Encode(%q) gave id %d of a vocabulary of %d", text, id, tok.VocabSize())
			}
		}
		_ = tok.Decode(ids)
		_ = tok.DecodeSkipSpecial(ids)
	})
}
