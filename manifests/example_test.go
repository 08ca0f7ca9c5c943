package manifests_test

import (
	"fmt"

	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/manifests"
)

type artifactPin struct {
	SchemaName string      `json:"schema"`
	Root       digest.Hash `json:"root"`
	Reason     string      `json:"reason"`
}

func (artifactPin) Schema() string { return "cairn.example_pin.v1" }

func Example() {
	b, err := manifests.Encode(artifactPin{
		SchemaName: "cairn.example_pin.v1",
		Root:       digest.Sum([]byte("a root")),
		Reason:     "backup <nightly> & more",
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(b))
	id := digest.Sum(b)

	var back artifactPin
	fmt.Println(manifests.DecodeVerified(b, id, &back), back.Reason)

	c, _ := manifests.CanonicalizeJSON([]byte(`{"b": 1e21, "a": [1.0, "\u00e9\/"]}`))
	fmt.Println(string(c))
	// Output:
	// {"reason":"backup <nightly> & more","root":"sha256:50b312f5cbc716759f5620d73a7cc11415707349f41b0ce0b7cf7b7807ec31da","schema":"cairn.example_pin.v1"}
	// <nil> backup <nightly> & more
	// {"a":[1.0,"é/"],"b":1e21}
}
