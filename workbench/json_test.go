package workbench_test

import (
	"bytes"
	"encoding/json"
)

// jsonUnmarshal decodes with numbers kept as json.Number.
func jsonUnmarshal(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}
