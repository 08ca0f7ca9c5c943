package workbench_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/manifests"
	"github.com/cairnstore/cairn/workbench"
)

// inputSchemasSHA256 pins the contract's published input-schema snapshot.
// The embedded copy must stay byte-identical to it.
const inputSchemasSHA256 = "7cfb9fa9e4eed6ee28fed7cf054b4ba7e3e4c14a8e675b0d18a8d3428bd83108"

var digest0 = "sha256:" + strings.Repeat("0", 64)

func TestSchemaSnapshotIsThePublishedOne(t *testing.T) {
	b, err := os.ReadFile("internal/core/schemas/input-schemas.json")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != inputSchemasSHA256 {
		t.Fatalf("internal/core/schemas/input-schemas.json sha256 = %s, want %s", got, inputSchemasSHA256)
	}
	var doc struct {
		InputSchemas map[string]json.RawMessage `json:"inputSchemas"`
		Schema       string                     `json:"schema"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != workbench.InputSchemasVersion {
		t.Fatalf("schema marker %q, want %q", doc.Schema, workbench.InputSchemasVersion)
	}
	// The compiled contract serves exactly the file's schemas.
	for name, raw := range doc.InputSchemas {
		want, err := manifests.CanonicalizeJSON(raw)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := workbench.InputSchema(name)
		if !ok {
			t.Fatalf("InputSchema(%q) missing", name)
		}
		if string(got) != string(want) {
			t.Errorf("InputSchema(%q) = %s, want %s", name, got, want)
		}
	}
	if len(doc.InputSchemas) != 18 {
		t.Fatalf("%d schemas in the file, want 18", len(doc.InputSchemas))
	}
}

func TestTools(t *testing.T) {
	tools := workbench.Tools()
	want := []string{
		"workbench_create", "workbench_put_file", "workbench_append", "workbench_edit",
		"workbench_list", "workbench_stat", "workbench_read", "workbench_grep",
		"workbench_search", "workbench_aggregate", "workbench_catalog", "workbench_find",
		"workbench_commit", "workbench_snapshot", "workbench_snapshot_renew",
		"workbench_snapshot_retire", "workbench_snapshot_list", "workbench_restore",
	}
	// Then the tools this test binary registers (registry_test.go), by
	// name.
	want = append(want, registeredForTest...)
	if !slices.Equal(tools, want) {
		t.Fatalf("Tools() = %v, want %v", tools, want)
	}
	tools[0] = "mutated"
	if workbench.Tools()[0] != "workbench_create" {
		t.Fatal("Tools returned shared storage")
	}
	for _, tool := range want {
		if _, ok := workbench.InputSchema(tool); !ok {
			t.Errorf("InputSchema(%q) missing", tool)
		}
	}
	if _, ok := workbench.InputSchema("workbench_delete"); ok {
		t.Error("InputSchema of an unknown tool exists")
	}
}

func TestValidInputsPass(t *testing.T) {
	tests := []struct {
		tool string
		raw  string
	}{
		// One minimal input per tool.
		{"workbench_create", `{"id":"wb-main"}`},
		{"workbench_put_file", `{"id":"w","section":"outputs","path":"a.txt"}`},
		{"workbench_append", `{"id":"w","section":"logs","path":"run.log"}`},
		{"workbench_edit", `{"id":"w","section":"scripts","path":"a.py","old_string":"a","new_string":"b"}`},
		{"workbench_list", `{"id":"w"}`},
		{"workbench_stat", `{"id":"w"}`},
		{"workbench_read", `{"id":"w","section":"input","path":"a.json"}`},
		{"workbench_grep", `{"id":"w","pattern":"x","recursive":true}`},
		{"workbench_search", `{}`},
		{"workbench_aggregate", `{"measures":[]}`},
		{"workbench_catalog", `{}`},
		{"workbench_find", `{}`},
		{"workbench_commit", `{"id":"w","manifest":{},"content_digest_uri":"` + digest0 + `"}`},
		{"workbench_snapshot", `{"id":"w"}`},
		{"workbench_snapshot_renew", `{"id":"w"}`},
		{"workbench_snapshot_retire", `{"id":"w","snapshot_id":1}`},
		{"workbench_snapshot_list", `{"id":"w"}`},
		{"workbench_restore", `{"id":"a","destination_id":"b"}`},

		// Every optional member, and the edges of each bound.
		{"workbench_put_file", `{"id":"w","section":"metadata","path":"x","text":"t","base64":"","content_type":"text/plain","replace":true}`},
		{"workbench_edit", `{"id":"w","section":"outputs","path":"p","old_string":"","new_string":"","replace_all":false}`},
		{"workbench_list", `{"id":"w","section":null,"path":null,"cursor":null,"limit":1,"at_snapshot":null}`},
		{"workbench_list", `{"id":"w","section":"logs","path":"a","cursor":"c","limit":100,"at_snapshot":"name"}`},
		{"workbench_list", `{"id":"w","at_snapshot":18446744073709551615}`},
		{"workbench_list", `{"id":"w","at_snapshot":0}`},
		{"workbench_stat", `{"id":"w","section":"outputs","path":"a","at_snapshot":7}`},
		{"workbench_read", `{"id":"w","section":"input","path":"a","format":"bytes","offset":0,"limit":300,"cursor":"b:3","if_none_match":0,"at_snapshot":"frozen"}`},
		{"workbench_grep", `{"id":"w","pattern":"","recursive":false,"patterns":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p"],"glob":"*.txt","path":"a","section":"logs","cursor":null,"limit":300}`},
		{"workbench_search", `{"id":null,"section":"outputs","path":"a","cursor":"c","limit":10,"fields":["f"],"facets":[],"sort":[{"field":"f","direction":"desc"}],` +
			`"predicates":[{"field":"f","op":"eq","value":"s"},{"field":"f","op":"gt","value":3},{"field":"f","op":"lt","value":-2.5},{"field":"f","op":"ne","value":-7},` +
			`{"field":"f","op":"in","value":["a",1,1.5,true]},{"field":"f","op":"exists","value":null},{"field":"f","op":"not_exists"},{"field":"f","op":"eq","value":false}]}`},
		{"workbench_aggregate", `{"id":"w","section":null,"path":null,"limit":100,"group_by":["g"],"measures":[{"name":"n","op":"count"},{"name":"s","op":"sum","field":"f"},{"name":"a","op":"avg","field":null}],"sort":[{"field":"n"}],"predicates":[]}`},
		{"workbench_catalog", `{"id":"w","section":"metadata","path":null,"field_prefix":"a","include_facets":true}`},
		{"workbench_find", `{"committed":null,"cursor":null,"include_manifest":true,"limit":100,"manifest_pattern":"ptycho"}`},
		{"workbench_commit", `{"id":"w","manifest":{"task":"x","n":[1,2.5]},"content_digest_uri":"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","replace":false}`},
		{"workbench_snapshot", `{"id":"w","name":null,"reason":null,"metadata":null,"ttl_days":90}`},
		{"workbench_snapshot", `{"id":"w","name":"n","reason":"` + strings.Repeat("😀", 256) + `","metadata":{"suite":"facade"},"ttl_days":1}`},
		{"workbench_snapshot_renew", `{"id":"w","snapshot_id":null,"name":null,"ttl_days":5}`},
		{"workbench_snapshot_renew", `{"id":"w","snapshot_id":0}`},
		{"workbench_snapshot_retire", `{"id":"w","name":"n","reason":"done"}`},
		{"workbench_restore", `{"id":"a","destination_id":"b","at_snapshot":0}`},
		{"workbench_restore", `{"id":"a","destination_id":"b","at_snapshot":"before-edit","at_commit":"` + strings.Repeat("é", 64) + `"}`},
		// Whitespace around the document is fine.
		{"workbench_create", " \t\r\n{ \"id\" : \"w\" }\n"},
	}
	for _, tt := range tests {
		args, err := workbench.ValidateInput(tt.tool, []byte(tt.raw))
		if err != nil {
			t.Errorf("ValidateInput(%s, %s) = %v, want success", tt.tool, tt.raw, err)
			continue
		}
		if args == nil {
			t.Errorf("ValidateInput(%s, %s) returned nil arguments", tt.tool, tt.raw)
		}
	}
}

func TestSchemaViolations(t *testing.T) {
	snapshotMetadata := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"id":"w","metadata":{`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"k%02d":%d`, i, i)
		}
		b.WriteString(`}}`)
		return b.String()
	}
	patterns := func(n int) string {
		p := make([]string, n)
		for i := range p {
			p[i] = fmt.Sprintf("%q", fmt.Sprint("p", i))
		}
		return `{"id":"w","pattern":"x","recursive":true,"patterns":[` + strings.Join(p, ",") + `]}`
	}
	tests := []struct {
		tool, raw, want string
	}{
		// required, then properties; members visited in key byte order.
		{"workbench_create", `{}`, "$: missing required field id"},
		{"workbench_create", `{"extra":1}`, "$: missing required field id"},
		{"workbench_create", `{"id":"w","extra":true}`, "$: unknown field extra"},
		{"workbench_create", `{"zz":1,"id":"w","aa":1}`, "$: unknown field aa"},
		{"workbench_create", `{"id":"w","ID":"w"}`, "$: unknown field ID"},
		{"workbench_grep", `{"id":"w","pattern":"x"}`, "$: missing required field recursive"},
		{"workbench_edit", `{"id":"w","section":"logs","path":"p","new_string":""}`, "$: missing required field old_string"},
		{"workbench_aggregate", `{}`, "$: missing required field measures"},

		// type, including the top level.
		{"workbench_create", `{"id":7}`, "$.id: has the wrong JSON type"},
		{"workbench_create", `{"id":null}`, "$.id: has the wrong JSON type"},
		{"workbench_create", `[]`, "$: has the wrong JSON type"},
		{"workbench_create", `"w"`, "$: has the wrong JSON type"},
		{"workbench_create", `null`, "$: has the wrong JSON type"},
		{"workbench_put_file", `{"id":"w","section":null,"path":"a"}`, "$.section: has the wrong JSON type"},
		{"workbench_put_file", `{"id":"w","section":"outputs","path":"a","replace":"true"}`, "$.replace: has the wrong JSON type"},
		{"workbench_catalog", `{"include_facets":null}`, "$.include_facets: has the wrong JSON type"},
		{"workbench_find", `{"committed":"yes"}`, "$.committed: has the wrong JSON type"},
		{"workbench_commit", `{"id":"w","manifest":[],"content_digest_uri":"` + digest0 + `"}`, "$.manifest: has the wrong JSON type"},
		{"workbench_snapshot", `{"id":"w","metadata":[]}`, "$.metadata: has the wrong JSON type"},

		// integer: a number without fraction or exponent within [-2^63, 2^64), not -0.
		{"workbench_list", `{"id":"w","limit":1.0}`, "$.limit: has the wrong JSON type"},
		{"workbench_list", `{"id":"w","limit":1e1}`, "$.limit: has the wrong JSON type"},
		{"workbench_list", `{"id":"w","limit":5E0}`, "$.limit: has the wrong JSON type"},
		{"workbench_list", `{"id":"w","limit":-0}`, "$.limit: has the wrong JSON type"},
		{"workbench_list", `{"id":"w","limit":"5"}`, "$.limit: has the wrong JSON type"},
		{"workbench_list", `{"id":"w","limit":18446744073709551616}`, "$.limit: has the wrong JSON type"},
		{"workbench_snapshot_renew", `{"id":"w","snapshot_id":1.5}`, "$.snapshot_id: has the wrong JSON type"},

		// minimum / maximum.
		{"workbench_list", `{"id":"w","limit":0}`, "$.limit: number is below minimum"},
		{"workbench_list", `{"id":"w","limit":101}`, "$.limit: number is above maximum"},
		{"workbench_list", `{"id":"w","limit":-9223372036854775808}`, "$.limit: number is below minimum"},
		{"workbench_list", `{"id":"w","limit":18446744073709551615}`, "$.limit: number is above maximum"},
		{"workbench_read", `{"id":"w","section":"input","path":"a","limit":301}`, "$.limit: number is above maximum"},
		{"workbench_read", `{"id":"w","section":"input","path":"a","if_none_match":-1}`, "$.if_none_match: number is below minimum"},
		{"workbench_read", `{"id":"w","section":"input","path":"a","offset":-3}`, "$.offset: number is below minimum"},
		{"workbench_grep", `{"id":"w","pattern":"x","recursive":true,"limit":0}`, "$.limit: number is below minimum"},
		{"workbench_search", `{"limit":11}`, "$.limit: number is above maximum"},
		{"workbench_aggregate", `{"measures":[],"limit":101}`, "$.limit: number is above maximum"},
		{"workbench_find", `{"limit":0}`, "$.limit: number is below minimum"},
		{"workbench_snapshot", `{"id":"w","ttl_days":0}`, "$.ttl_days: number is below minimum"},
		{"workbench_snapshot", `{"id":"w","ttl_days":91}`, "$.ttl_days: number is above maximum"},
		{"workbench_snapshot_renew", `{"id":"w","ttl_days":91}`, "$.ttl_days: number is above maximum"},
		{"workbench_snapshot_renew", `{"id":"w","snapshot_id":-1}`, "$.snapshot_id: number is below minimum"},

		// enum.
		{"workbench_put_file", `{"id":"w","section":"other","path":"a"}`, "$.section: value is outside the accepted enum"},
		{"workbench_put_file", `{"id":"w","section":"Outputs","path":"a"}`, "$.section: value is outside the accepted enum"},
		{"workbench_list", `{"id":"w","section":"other"}`, "$.section: value is outside the accepted enum"},
		{"workbench_read", `{"id":"w","section":"input","path":"a","format":"text"}`, "$.format: value is outside the accepted enum"},
		{"workbench_search", `{"predicates":[{"field":"f","op":"like"}]}`, "$.predicates[0].op: value is outside the accepted enum"},
		{"workbench_search", `{"sort":[{"field":"f","direction":"up"}]}`, "$.sort[0].direction: value is outside the accepted enum"},
		{"workbench_aggregate", `{"measures":[{"name":"n","op":"median"}]}`, "$.measures[0].op: value is outside the accepted enum"},

		// anyOf.
		{"workbench_list", `{"id":"w","at_snapshot":-1}`, "$.at_snapshot: does not match any accepted shape"},
		{"workbench_list", `{"id":"w","at_snapshot":1.5}`, "$.at_snapshot: does not match any accepted shape"},
		{"workbench_stat", `{"id":"w","at_snapshot":true}`, "$.at_snapshot: does not match any accepted shape"},
		{"workbench_read", `{"id":"w","section":"input","path":"a","at_snapshot":{}}`, "$.at_snapshot: does not match any accepted shape"},
		{"workbench_restore", `{"id":"a","destination_id":"b","at_snapshot":""}`, "$.at_snapshot: does not match any accepted shape"},
		{"workbench_restore", `{"id":"a","destination_id":"b","at_snapshot":null}`, "$.at_snapshot: does not match any accepted shape"},
		{"workbench_search", `{"predicates":[{"field":"f","op":"eq","value":{}}]}`, "$.predicates[0].value: does not match any accepted shape"},
		{"workbench_search", `{"predicates":[{"field":"f","op":"in","value":[[1]]}]}`, "$.predicates[0].value: does not match any accepted shape"},
		{"workbench_aggregate", `{"measures":[],"predicates":[{"field":"f","op":"in","value":[null]}]}`, "$.predicates[0].value: does not match any accepted shape"},

		// oneOf, checked before type.
		{"workbench_snapshot_retire", `{"id":"w"}`, "$: must match exactly one accepted shape, matched 0"},
		{"workbench_snapshot_retire", `{"id":"w","snapshot_id":1,"name":"n"}`, "$: must match exactly one accepted shape, matched 2"},
		{"workbench_snapshot_retire", `[]`, "$: must match exactly one accepted shape, matched 0"},
		{"workbench_snapshot_retire", `{"id":"w","snapshot_id":null}`, "$.snapshot_id: has the wrong JSON type"},

		// items, nested objects.
		{"workbench_grep", `{"id":"w","pattern":"x","recursive":true,"patterns":["a",2]}`, "$.patterns[1]: has the wrong JSON type"},
		{"workbench_search", `{"predicates":[{"op":"eq"}]}`, "$.predicates[0]: missing required field field"},
		{"workbench_search", `{"predicates":[{"field":"f","op":"eq"},{"field":"f","op":"eq","x":1}]}`, "$.predicates[1]: unknown field x"},
		{"workbench_search", `{"fields":[null]}`, "$.fields[0]: has the wrong JSON type"},
		{"workbench_aggregate", `{"measures":[{"name":"n","op":"count","field":3}]}`, "$.measures[0].field: has the wrong JSON type"},
		{"workbench_aggregate", `{"measures":{}}`, "$.measures: has the wrong JSON type"},

		// maxItems: at most 16 grep patterns.
		{"workbench_grep", patterns(17), "$.patterns: array exceeds maxItems"},

		// minLength / maxLength in Unicode scalar values.
		{"workbench_restore", `{"id":"a","destination_id":"b","at_commit":"` + strings.Repeat("a", 63) + `"}`, "$.at_commit: string is shorter than minLength"},
		{"workbench_restore", `{"id":"a","destination_id":"b","at_commit":"` + strings.Repeat("a", 65) + `"}`, "$.at_commit: string is longer than maxLength"},
		{"workbench_restore", `{"id":"a","destination_id":"b","at_commit":"` + strings.Repeat("é", 65) + `"}`, "$.at_commit: string is longer than maxLength"},
		{"workbench_restore", `{"id":"","destination_id":"b"}`, "$.id: string is shorter than minLength"},
		{"workbench_restore", `{"id":"a","destination_id":""}`, "$.destination_id: string is shorter than minLength"},
		{"workbench_snapshot", `{"id":"w","reason":""}`, "$.reason: string is shorter than minLength"},
		{"workbench_snapshot", `{"id":"w","reason":"` + strings.Repeat("😀", 257) + `"}`, "$.reason: string is longer than maxLength"},
		{"workbench_snapshot_retire", `{"id":"w","name":""}`, "$.name: string is shorter than minLength"},
		{"workbench_snapshot_retire", `{"id":"","snapshot_id":1}`, "$.id: string is shorter than minLength"},

		// pattern: only ^sha256:[0-9a-f]{64}$.
		{"workbench_commit", `{"id":"w","manifest":{},"content_digest_uri":"sha256:ABC"}`, "$.content_digest_uri: string does not match required pattern"},
		{"workbench_commit", `{"id":"w","manifest":{},"content_digest_uri":"sha256:` + strings.Repeat("A", 64) + `"}`, "$.content_digest_uri: string does not match required pattern"},
		{"workbench_commit", `{"id":"w","manifest":{},"content_digest_uri":"sha256:` + strings.Repeat("0", 63) + `"}`, "$.content_digest_uri: string does not match required pattern"},
		{"workbench_commit", `{"id":"w","manifest":{},"content_digest_uri":"sha512:` + strings.Repeat("0", 64) + `"}`, "$.content_digest_uri: string does not match required pattern"},
		{"workbench_commit", `{"id":"w","manifest":{},"content_digest_uri":"` + digest0 + `\n"}`, "$.content_digest_uri: string does not match required pattern"},

		// maxProperties.
		{"workbench_snapshot", snapshotMetadata(65), "$.metadata: object exceeds maxProperties"},

		// Not JSON the reference parser accepts.
		{"workbench_create", ``, "$: arguments are not valid JSON"},
		{"workbench_create", `{"id":}`, "$: arguments are not valid JSON"},
		{"workbench_create", `{"id":"w",}`, "$: arguments are not valid JSON"},
		{"workbench_create", `{"id":"w"} {}`, "$: arguments are not valid JSON"},
		{"workbench_create", `{'id':'w'}`, "$: arguments are not valid JSON"},
		{"workbench_create", `{"id":"\ud800"}`, "$: arguments are not valid JSON"},
		{"workbench_create", "{\"id\":\"\xff\"}", "$: arguments are not valid JSON"},
		{"workbench_create", "{\"id\":\"a\tb\"}", "$: arguments are not valid JSON"},
		{"workbench_list", `{"id":"w","limit":01}`, "$: arguments are not valid JSON"},
		{"workbench_list", `{"id":"w","limit":1e400}`, "$: arguments are not valid JSON"},
		{"workbench_list", `{"id":"w","limit":NaN}`, "$: arguments are not valid JSON"},
		{"workbench_commit", `{"id":"w","content_digest_uri":"` + digest0 + `","manifest":` + strings.Repeat("[", 127) + strings.Repeat("]", 127) + `}`, "$: arguments are not valid JSON"},
	}
	for _, tt := range tests {
		args, err := workbench.ValidateInput(tt.tool, []byte(tt.raw))
		if err == nil {
			t.Errorf("ValidateInput(%s, %.80s) = success, want %q", tt.tool, tt.raw, tt.want)
			continue
		}
		if args != nil {
			t.Errorf("ValidateInput(%s, %.80s) returned arguments beside an error", tt.tool, tt.raw)
		}
		want := tt.tool + ": " + tt.want
		if err.Code != workbench.CodeInvalidArguments || err.Message != want || err.Retryable || len(err.Details) != 0 {
			t.Errorf("ValidateInput(%s, %.80s) = %+v, want InvalidArguments %q", tt.tool, tt.raw, err, want)
		}
		env, merr := workbench.MarshalResult(err.Envelope())
		if merr != nil {
			t.Fatal(merr)
		}
		wantEnv, _ := workbench.MarshalResult(map[string]any{
			"status": "error", "code": "InvalidArguments", "message": want, "retryable": false, "details": map[string]any{},
		})
		if string(env) != string(wantEnv) {
			t.Errorf("envelope %s, want %s", env, wantEnv)
		}
	}
}

func TestNestingLimit(t *testing.T) {
	// The reference parser accepts 127 levels: the arguments object and 126
	// more.
	ok := `{"id":"w","content_digest_uri":"` + digest0 + `","manifest":{"a":` + strings.Repeat("[", 125) + strings.Repeat("]", 125) + `}}`
	if _, err := workbench.ValidateInput("workbench_commit", []byte(ok)); err != nil {
		t.Fatalf("127 levels: %v", err)
	}
	deep := `{"id":"w","content_digest_uri":"` + digest0 + `","manifest":{"a":` + strings.Repeat("[", 126) + strings.Repeat("]", 126) + `}}`
	if _, err := workbench.ValidateInput("workbench_commit", []byte(deep)); err == nil || err.Message != "workbench_commit: $: arguments are not valid JSON" {
		t.Fatalf("128 levels: %v, want not valid JSON", err)
	}
}

func TestUnknownTool(t *testing.T) {
	// The tool is looked up before the arguments are read.
	for _, raw := range []string{`{"id":"w"}`, `not json`} {
		args, err := workbench.ValidateInput("workbench_delete", []byte(raw))
		if args != nil || err == nil {
			t.Fatalf("ValidateInput(workbench_delete) = %v, %v", args, err)
		}
		if err.Code != workbench.CodeUnknownTool || err.Retryable || err.Message != "unknown Workbench tool workbench_delete" {
			t.Fatalf("error %+v", err)
		}
		env, _ := workbench.MarshalResult(err.Envelope())
		if got, want := string(env), `{"code":"UnknownTool","details":{"tool":"workbench_delete"},"message":"unknown Workbench tool workbench_delete","retryable":false,"status":"error"}`; got != want {
			t.Fatalf("envelope %s, want %s", got, want)
		}
	}
}

func TestDuplicateKeysKeepTheLast(t *testing.T) {
	args, err := workbench.ValidateInput("workbench_create", []byte(`{"id":1,"id":"wb-2"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := args["id"]; got != "wb-2" {
		t.Fatalf("id = %v, want wb-2", got)
	}
	if _, err := workbench.ValidateInput("workbench_create", []byte(`{"id":"w","id":1}`)); err == nil || err.Message != "workbench_create: $.id: has the wrong JSON type" {
		t.Fatalf("last duplicate not validated: %v", err)
	}
}

func TestDecodedArguments(t *testing.T) {
	raw := `{"id":"a\u00e9\ud83d\ude00","manifest":{"n":1E2,"i":-5,"z":-0,"u":18446744073709551615,"f":0.1,"b":[true,null]},"content_digest_uri":"` + digest0 + `"}`
	args, err := workbench.ValidateInput("workbench_commit", []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if got := args["id"]; got != "aé😀" {
		t.Fatalf("id = %q", got)
	}
	m := args["manifest"].(map[string]any)
	for k, want := range map[string]json.Number{"n": "100.0", "i": "-5", "z": "-0.0", "u": "18446744073709551615", "f": "0.1"} {
		if got := m[k]; got != want {
			t.Errorf("manifest.%s = %#v, want json.Number %q", k, got, want)
		}
	}
	if got := m["b"].([]any); len(got) != 2 || got[0] != true || got[1] != nil {
		t.Errorf("manifest.b = %#v", got)
	}
}
