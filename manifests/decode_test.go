package manifests_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/manifests"
)

// runManifest has the shape of the Workbench's run manifest envelope, with
// its fields declared out of order on purpose.
type runManifest struct {
	WorkbenchPath  string          `json:"workbench_path"`
	Manifest       json.RawMessage `json:"manifest"`
	SchemaName     string          `json:"schema"`
	CommitIdentity string          `json:"commit_identity"`
	ManifestDigest digest.Hash     `json:"manifest_digest_uri"`
	CommittedAt    uint64          `json:"committed_at_unix_seconds"`
	ContentDigest  digest.Hash     `json:"content_digest_uri"`
	WorkbenchID    string          `json:"workbench_id"`
}

func (runManifest) Schema() string { return "nokv.workbench.run_manifest.v1" }

// pin is a small cairn-style document used by the error tests.
type pin struct {
	SchemaName string         `json:"schema"`
	Root       digest.Hash    `json:"root"`
	Count      uint64         `json:"count"`
	Note       string         `json:"note,omitempty"`
	Extra      map[string]any `json:"extra,omitempty"`
}

func (pin) Schema() string { return "cairn.pin.v1" }

var rootHash = digest.Sum([]byte("root"))

func pinJSON(members ...string) []byte {
	return []byte("{" + strings.Join(members, ",") + "}")
}

var (
	mCount  = `"count":7`
	mRoot   = `"root":"` + rootHash.URI() + `"`
	mSchema = `"schema":"cairn.pin.v1"`
)

// TestWorkbenchGolden reproduces digests recorded from the Workbench
// reference: the canonical caller manifest and the 8-key run manifest
// envelope built around it (472 bytes).
func TestWorkbenchGolden(t *testing.T) {
	manifest, err := manifests.CanonicalizeJSON([]byte(`{ "task": "ptycho", "model": "viking" }`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(manifest), `{"model":"viking","task":"ptycho"}`; got != want {
		t.Fatalf("manifest = %s, want %s", got, want)
	}
	const manifestDigest = "sha256:23312ff4198ab547af02d6789dc98321be2eb44c088c333a58edd3060ce6c51d"
	if got := digest.Sum(manifest).URI(); got != manifestDigest {
		t.Errorf("manifest digest = %s, want %s", got, manifestDigest)
	}
	contentDigest, err := digest.ParseURI("sha256:0101010101010101010101010101010101010101010101010101010101010101")
	if err != nil {
		t.Fatal(err)
	}
	rm := runManifest{
		WorkbenchPath:  "/agents/test/wb/wb-main",
		Manifest:       manifest,
		SchemaName:     "nokv.workbench.run_manifest.v1",
		CommitIdentity: "9f3a0a156b426292b0791551b05f6d53f53b906cf7327065b92a04a18b834cff",
		ManifestDigest: digest.Sum(manifest),
		CommittedAt:    1700000000,
		ContentDigest:  contentDigest,
		WorkbenchID:    "wb-main",
	}
	env, err := manifests.Encode(rm)
	if err != nil {
		t.Fatal(err)
	}
	const envelopeDigest = "sha256:dd01f7d8664ac3ee857bd5b59a57aa97eb5d8ec1024f5df73fdc1a1f028d1bf7"
	if got := digest.Sum(env).URI(); got != envelopeDigest || len(env) != 472 {
		t.Errorf("envelope digest = %s (%d bytes), want %s (472 bytes)\n%s", got, len(env), envelopeDigest, env)
	}
	wantPrefix := `{"commit_identity":"9f3a0a156b426292b0791551b05f6d53f53b906cf7327065b92a04a18b834cff","committed_at_unix_seconds":1700000000,"content_digest_uri":"sha256:0101`
	if !strings.HasPrefix(string(env), wantPrefix) {
		t.Errorf("envelope starts %.160s, want %s", env, wantPrefix)
	}

	var back runManifest
	if err := manifests.DecodeVerified(env, digest.Sum(env), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, rm) {
		t.Errorf("decoded %+v, want %+v", back, rm)
	}
	err = manifests.DecodeVerified(env, digest.Sum(manifest), &back)
	if !errors.Is(err, manifests.ErrIntegrity) || !errors.Is(err, bucket.ErrIntegrity) {
		t.Errorf("DecodeVerified(wrong hash) = %v, want ErrIntegrity", err)
	}
}

// TestEncodeKeyOrder: the serialized key order comes from sorting, not from
// the struct: a restore-manifest-shaped struct declared in reverse order
// encodes in byte order, nested objects too.
func TestEncodeKeyOrder(t *testing.T) {
	type source struct {
		SnapshotID uint64 `json:"snapshot_id"`
		Kind       string `json:"kind"`
	}
	type restoredFrom struct {
		WorkbenchID string `json:"workbench_id"`
		Source      source `json:"source"`
		Path        string `json:"path"`
	}
	type restoreManifest struct {
		SourceWorkbenchID      string       `json:"source_workbench_id"`
		SourcePath             string       `json:"source_path"`
		SchemaName             string       `json:"schema"`
		RestoredFrom           restoredFrom `json:"restored_from"`
		OperationID            string       `json:"operation_id"`
		DestinationWorkbenchID string       `json:"destination_workbench_id"`
		DestinationPath        string       `json:"destination_path"`
	}
	b, err := manifests.Encode(restoreManifest{
		SourceWorkbenchID:      "src",
		SourcePath:             "/r/src",
		SchemaName:             "nokv.workbench.restore_manifest.v2",
		RestoredFrom:           restoredFrom{WorkbenchID: "src", Source: source{SnapshotID: 18446744073709551615, Kind: "snapshot"}, Path: "/r/src"},
		OperationID:            "00112233445566778899aabbccddeeff",
		DestinationWorkbenchID: "dst",
		DestinationPath:        "/r/dst",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"destination_path":"/r/dst","destination_workbench_id":"dst","operation_id":"00112233445566778899aabbccddeeff",` +
		`"restored_from":{"path":"/r/src","source":{"kind":"snapshot","snapshot_id":18446744073709551615},"workbench_id":"src"},` +
		`"schema":"nokv.workbench.restore_manifest.v2","source_path":"/r/src","source_workbench_id":"src"}`
	if string(b) != want {
		t.Errorf("Encode:\n got %s\nwant %s", b, want)
	}
}

func TestDecodeAccepts(t *testing.T) {
	b := pinJSON(mCount, `"extra":{"f":1.5,"n":[1,"x",-0.0,1e21]}`, `"note":"n"`, mRoot, mSchema)
	var p pin
	if err := manifests.Decode(b, &p); err != nil {
		t.Fatal(err)
	}
	if p.Count != 7 || p.Root != rootHash || p.Note != "n" || p.Extra["f"] != json.Number("1.5") {
		t.Errorf("decoded %+v", p)
	}
	out, err := manifests.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(b) {
		t.Errorf("re-encode:\n got %s\nwant %s", out, b)
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []byte
		want error
	}{
		{"not JSON", []byte(`{"count":7`), manifests.ErrInvalid},
		{"trailing data", append(pinJSON(mCount, mRoot, mSchema), " {}"...), manifests.ErrInvalid},
		{"whitespace", []byte(`{"count": 7,` + mRoot + `,` + mSchema + `}`), manifests.ErrNotCanonical},
		{"unsorted", pinJSON(mRoot, mCount, mSchema), manifests.ErrNotCanonical},
		{"duplicate key", pinJSON(mCount, mCount, mRoot, mSchema), manifests.ErrNotCanonical},
		{"escaped slash", []byte(`{"count":7,"note":"a\/b",` + mRoot + `,` + mSchema + `}`), manifests.ErrNotCanonical},
		{"other schema", pinJSON(mCount, mRoot, `"schema":"cairn.pin.v2"`), manifests.ErrSchema},
		{"other schema with new fields", pinJSON(mCount, `"future":true`, mRoot, `"schema":"cairn.pin.v2"`), manifests.ErrSchema},
		{"schema case", pinJSON(mCount, mRoot, `"schema":"Cairn.pin.v1"`), manifests.ErrSchema},
		{"no schema", pinJSON(mCount, mRoot), manifests.ErrSchema},
		{"schema not a string", pinJSON(mCount, mRoot, `"schema":1`), manifests.ErrSchema},
		{"not an object", []byte(`["cairn.pin.v1"]`), manifests.ErrSchema},
		{"unknown field", pinJSON(`"bogus":1`, mCount, mRoot, mSchema), manifests.ErrUnknownField},
		{"field name case", pinJSON(`"Count":7`, mRoot, mSchema), manifests.ErrUnknownField},
		{"omitted zero value present", pinJSON(mCount, `"note":""`, mRoot, mSchema), manifests.ErrUnknownField},
		{"missing field", pinJSON(mRoot, mSchema), manifests.ErrInvalid},
		{"wrong type", pinJSON(`"count":"7"`, mRoot, mSchema), manifests.ErrInvalid},
		{"negative count", pinJSON(`"count":-7`, mRoot, mSchema), manifests.ErrInvalid},
		{"float count", pinJSON(`"count":7.0`, mRoot, mSchema), manifests.ErrInvalid},
		{"bad hash", pinJSON(mCount, `"root":"sha256:`+strings.ToUpper(rootHash.String())+`"`, mSchema), manifests.ErrInvalid},
	} {
		p := pin{Note: "unchanged"}
		err := manifests.Decode(c.in, &p)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: Decode(%s) = %v, want %v", c.name, c.in, err, c.want)
		}
		if !reflect.DeepEqual(p, pin{Note: "unchanged"}) {
			t.Errorf("%s: target changed on error: %+v", c.name, p)
		}
	}
}

func TestDecodeStrict(t *testing.T) {
	in := []byte(`{"a":[1,2.5,-0.0,"x",{"b":null}],"c":18446744073709551615}`)
	var v any
	if err := manifests.DecodeStrict(in, &v); err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if got := m["a"].([]any)[1]; got != json.Number("2.5") {
		t.Errorf("a[1] = %#v, want json.Number 2.5", got)
	}
	if err := manifests.DecodeStrict([]byte(`{"b":1,"a":2}`), &v); !errors.Is(err, manifests.ErrNotCanonical) {
		t.Errorf("unsorted = %v, want ErrNotCanonical", err)
	}
	var s struct {
		A int `json:"a"`
	}
	if err := manifests.DecodeStrict([]byte(`{"a":1}`), s); err == nil {
		t.Error("DecodeStrict into a non-pointer succeeded")
	}
	if err := manifests.DecodeStrict([]byte(`{"a":1,"b":2}`), &s); !errors.Is(err, manifests.ErrUnknownField) {
		t.Errorf("unknown field = %v, want ErrUnknownField", err)
	}
	// A float64 field cannot hold "1.0" faithfully: it would write "1".
	var f struct {
		X float64 `json:"x"`
	}
	if err := manifests.DecodeStrict([]byte(`{"x":1.0}`), &f); !errors.Is(err, manifests.ErrNotCanonical) {
		t.Errorf("float64 field = %v, want ErrNotCanonical", err)
	}
}

type hidden struct{ F float64 }

func TestEncodeRefusesFloats(t *testing.T) {
	type nested struct {
		P *struct{ F float32 } `json:"p"`
	}
	for _, doc := range []any{
		struct{ F float64 }{1},
		struct{ A any }{A: 1.5},
		map[string]any{"a": []any{1, 2.0}},
		[]float32{1},
		nested{P: &struct{ F float32 }{1}},
		struct{ hidden }{hidden{1}},
	} {
		if _, err := manifests.Encode(doc); !errors.Is(err, manifests.ErrFloat) {
			t.Errorf("Encode(%#v) = %v, want ErrFloat", doc, err)
		}
	}
	for _, doc := range []any{
		struct{ N json.Number }{"1.5"},
		struct{ R json.RawMessage }{json.RawMessage(`[1.5, 1e21, -0]`)},
		struct {
			F float64 `json:"-"`
			H digest.Hash
		}{F: 1},
		map[string]any{"a": json.Number("2.0")},
	} {
		if _, err := manifests.Encode(doc); err != nil {
			t.Errorf("Encode(%#v) = %v", doc, err)
		}
	}
}

// TestEncodeRefusesUnstableBytes: Encode does not write bytes that Decode
// would refuse.
func TestEncodeRefusesUnstableBytes(t *testing.T) {
	doc := struct {
		M json.RawMessage `json:"m"`
	}{json.RawMessage(`[100070000101117100000000]`)} // canonical: 1.0007000010111709e23
	if _, err := manifests.Encode(doc); !errors.Is(err, manifests.ErrNotCanonical) {
		t.Errorf("Encode(unstable float) = %v, want ErrNotCanonical", err)
	}
	doc.M = json.RawMessage(`[1.0007000010111707e23]`)
	if _, err := manifests.Encode(doc); err != nil {
		t.Errorf("Encode(stable float) = %v", err)
	}
}

func TestEncodeChecksSchema(t *testing.T) {
	for _, name := range []string{"", "cairn.pin.v2"} {
		_, err := manifests.Encode(pin{SchemaName: name, Root: rootHash, Count: 1})
		if !errors.Is(err, manifests.ErrSchema) {
			t.Errorf("Encode(schema %q) = %v, want ErrSchema", name, err)
		}
	}
	b, err := manifests.Encode(&pin{SchemaName: "cairn.pin.v1", Root: rootHash, Count: 7})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), string(pinJSON(mCount, mRoot, mSchema)); got != want {
		t.Errorf("Encode = %s, want %s", got, want)
	}
}
