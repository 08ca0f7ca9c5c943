package workbench_test

import (
	"encoding/json"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// A typed result prints the bytes of the map with the same members:
// keys sorted, floats in the reference's form, nil slices as [], and
// json tags, omitempty, "-" and embedded structs as encoding/json reads
// them.
func TestMarshalResultStruct(t *testing.T) {
	type Inner struct {
		Digest string `json:"digest"`
		Size   uint64 `json:"size_bytes"`
	}
	type Base struct {
		ID   string `json:"id"`
		Path string `json:"path"`
	}
	type Result struct {
		Base
		*Inner
		Status   string            `json:"status"`
		Ratio    float64           `json:"ratio"`
		Items    []string          `json:"items"`
		Cursor   *string           `json:"cursor"`
		Skipped  *string           `json:"skipped,omitempty"`
		Count    int               `json:"count,omitempty"`
		Meta     map[string]any    `json:"meta"`
		Tags     map[string]string `json:"tags,omitempty"`
		Hidden   string            `json:"-"`
		Untagged bool
		secret   int
		Raw      json.RawMessage `json:"raw"`
		Path     string          `json:"path_override"`
	}
	cur := "c1"
	r := Result{
		Base:     Base{ID: "wb", Path: "outputs/a"},
		Inner:    &Inner{Digest: "sha256:00", Size: 3},
		Status:   "success",
		Ratio:    2,
		Cursor:   &cur,
		Meta:     map[string]any{"b": 1.5, "a": nil},
		Hidden:   "no",
		Untagged: true,
		secret:   1,
		Raw:      json.RawMessage(`{"z":1, "a":[1,2]}`),
		Path:     "shadow",
	}
	_ = r.secret
	got, err := workbench.MarshalResult(r)
	if err != nil {
		t.Fatal(err)
	}
	want, err := workbench.MarshalResult(map[string]any{
		"id": "wb", "path": "outputs/a", "digest": "sha256:00", "size_bytes": uint64(3),
		"status": "success", "ratio": 2.0, "items": []string(nil), "cursor": "c1",
		"meta": map[string]any{"b": 1.5, "a": nil}, "Untagged": true,
		"raw": json.RawMessage(`{"a":[1,2],"z":1}`), "path_override": "shadow",
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("struct:\n%s\nmap:\n%s", got, want)
	}
	// A nil embedded pointer contributes nothing; omitempty members
	// appear once set.
	r.Inner, r.Skipped, r.Count, r.Tags = nil, &cur, 2, map[string]string{"k": "v"}
	got, err = workbench.MarshalResult(r)
	if err != nil {
		t.Fatal(err)
	}
	const wantSecond = `{"Untagged":true,"count":2,"cursor":"c1","id":"wb","items":[],"meta":{"a":null,"b":1.5},"path":"outputs/a","path_override":"shadow","ratio":2.0,"raw":{"a":[1,2],"z":1},"skipped":"c1","status":"success","tags":{"k":"v"}}`
	if string(got) != wantSecond {
		t.Fatalf("got  %s\nwant %s", got, wantSecond)
	}
}
