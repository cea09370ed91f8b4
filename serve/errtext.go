package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// fileErrText is err's message for a client, without bytes of the file it failed on:
// encoding/json's syntax errors quote the character they stopped at ("invalid character 'S'"),
// which may be the start of a secret a symlink pointed at; that part becomes the byte offset.
func fileErrText(err error) string {
	msg := err.Error()
	var se *json.SyntaxError
	if errors.As(err, &se) {
		if i := strings.Index(msg, se.Error()); i >= 0 {
			return msg[:i] + fmt.Sprintf("not valid JSON (at byte %d)", se.Offset) + msg[i+len(se.Error()):]
		}
		return fmt.Sprintf("a file is not valid JSON (at byte %d)", se.Offset)
	}
	return msg
}
