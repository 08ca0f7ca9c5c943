package core_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests"
	"github.com/cairnstore/cairn/workbench/internal/core"
)

// The error objects of the contract's golden result transcript
// (result-transcript.json, "errors"), as the reference pretty-prints each
// one on its own.
var transcriptErrors = map[string]string{
	"invalid_arguments": `{
  "code": "InvalidArguments",
  "details": {},
  "message": "text and base64 are mutually exclusive",
  "retryable": false,
  "status": "error"
}`,
	"restore_protocol_mismatch": `{
  "code": "RestoreProtocolMismatch",
  "details": {
    "actual_snapshot_id": 2,
    "expected_snapshot_id": 1
  },
  "message": "restore operation identity did not match the durable request",
  "retryable": true,
  "status": "error"
}`,
	"routing_unavailable": `{
  "code": "RoutingUnavailable",
  "details": {
    "retry_after_ms": 25
  },
  "message": "owner is moving",
  "retryable": true,
  "status": "error"
}`,
	"snapshot_expired": `{
  "code": "SnapshotExpired",
  "details": {
    "source": "fake"
  },
  "message": "snapshot is not alive",
  "retryable": false,
  "status": "error"
}`,
	"workbench_commit_conflict": `{
  "code": "WorkbenchCommitConflict",
  "details": {
    "requested_replace": false,
    "stored_generation": 8
  },
  "message": "stored run manifest names a different canonical commit",
  "retryable": false,
  "status": "error"
}`,
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestEnvelopesMatchTheTranscript(t *testing.T) {
	errs := map[string]*core.Error{
		"invalid_arguments": core.InvalidArguments("text and base64 are mutually exclusive"),
		"restore_protocol_mismatch": core.RestoreProtocolMismatch(core.BackendProtocolMismatch(
			"restore operation identity did not match the durable request",
			map[string]any{"expected_snapshot_id": 1, "actual_snapshot_id": uint64(2)})),
		"routing_unavailable": {Code: "RoutingUnavailable", Message: "owner is moving", Retryable: true,
			Details: map[string]any{"retry_after_ms": 25}},
		"snapshot_expired": {Code: core.CodeSnapshotExpired, Message: "snapshot is not alive",
			Details: map[string]any{"source": "fake"}},
		"workbench_commit_conflict": core.CommitConflict(&core.Error{Code: core.CodeConflict,
			Message: "stored run manifest names a different canonical commit",
			Details: map[string]any{"stored_generation": 8, "requested_replace": false}}),
	}
	for name, want := range transcriptErrors {
		e := errs[name]
		got, err := core.MarshalResult(e.Envelope())
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != compact(t, want) {
			t.Errorf("%s: compact envelope\n got %s\nwant %s", name, got, compact(t, want))
		}
		pretty, err := core.MarshalResultIndent(e.Envelope())
		if err != nil {
			t.Fatal(err)
		}
		if string(pretty) != want {
			t.Errorf("%s: pretty envelope\n got %s\nwant %s", name, pretty, want)
		}
		viaJSON, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if string(viaJSON) != string(got) {
			t.Errorf("%s: json.Marshal(*Error) = %s, want %s", name, viaJSON, got)
		}
	}
}

func TestEnvelopeShape(t *testing.T) {
	e := &core.Error{Code: "X", Message: "m"}
	env := e.Envelope()
	if len(env) != 5 {
		t.Fatalf("envelope has %d members: %v", len(env), env)
	}
	d, ok := env["details"].(map[string]any)
	if !ok || d == nil || len(d) != 0 {
		t.Fatalf("details = %#v, want an empty map", env["details"])
	}
	// The envelope's details are a copy.
	d["k"] = 1
	if len(e.Details) != 0 {
		t.Fatal("Envelope shares the details map")
	}
	b, _ := core.MarshalResult(env)
	if got, want := string(b), `{"code":"X","details":{"k":1},"message":"m","retryable":false,"status":"error"}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if got := e.Error(); got != "workbench: X: m" {
		t.Fatalf("Error() = %q", got)
	}
	w := core.NotFound("outputs/a").With("path", "/agents/x/wb/w/outputs/a").With("extra", true)
	if w.Details["path"] != "/agents/x/wb/w/outputs/a" || w.Details["extra"] != true || w.Code != core.CodeNotFound {
		t.Fatalf("With: %+v", w)
	}
}

func TestConstructors(t *testing.T) {
	gen := uint64(9)
	tests := []struct {
		name      string
		err       *core.Error
		code      string
		retryable bool
		message   string
		details   string // canonical JSON
	}{
		{"InvalidArguments", core.InvalidArguments("exactly one of text or base64 is required"), "InvalidArguments", false, "exactly one of text or base64 is required", `{}`},
		{"InvalidArgumentsf", core.InvalidArgumentsf("at most %d grep alternatives are allowed", 16), "InvalidArguments", false, "at most 16 grep alternatives are allowed", `{}`},
		{"UnknownTool", core.UnknownTool("x"), "UnknownTool", false, "unknown Workbench tool x", `{"tool":"x"}`},
		{"NotFound", core.NotFound("outputs/a.txt"), "NotFound", false, "path not found: outputs/a.txt", `{"path":"outputs/a.txt"}`},
		{"NotFound root", core.NotFound(""), "NotFound", false, "path not found: ", `{"path":""}`},
		{"NotArtifact", core.NotArtifact("outputs"), "NotArtifact", false, "path is not an artifact: outputs", `{"path":"outputs"}`},
		{"PayloadTooLarge", core.PayloadTooLarge(16777217, 16777216), "PayloadTooLarge", false, "payload is 16777217 bytes, maximum is 16777216", `{"actual_bytes":16777217,"maximum_bytes":16777216}`},
		{"InvalidUTF8", core.InvalidUTF8("logs/x.bin"), "InvalidUtf8", false, "logs/x.bin is not valid UTF-8", `{"path":"logs/x.bin"}`},
		{"StructuredTextNotUTF8", core.StructuredTextNotUTF8("logs/x.bin"), "InvalidUtf8", false, "structured text read requires UTF-8", `{"path":"logs/x.bin"}`},
		{"NoMatch", core.NoMatch("outputs/a"), "NoMatch", false, "old_string was not found", `{"path":"outputs/a"}`},
		{"AmbiguousEdit", core.AmbiguousEdit(3), "AmbiguousEdit", false, "old_string occurs 3 times; set replace_all=true", `{"matches":3}`},
		{"EditConflict", core.EditConflict(5, "generation changed"), "Conflict", true, "conditional publication conflicted after 5 attempts", `{"attempts":5,"last_error":"generation changed"}`},
		{"StructuredDecodeFailed json", core.StructuredDecodeFailed("outputs/a.json", "json", errors.New("EOF while parsing")), "StructuredDecodeFailed", false, "JSON decoding failed: EOF while parsing", `{"format":"json","path":"outputs/a.json"}`},
		{"StructuredDecodeFailed yaml", core.StructuredDecodeFailed("outputs/a.yml", "yaml", errors.New("bad")), "StructuredDecodeFailed", false, "YAML decoding failed: bad", `{"format":"yaml","path":"outputs/a.yml"}`},
		{"CanonicalEncodingFailed", core.CanonicalEncodingFailed("annotation cannot be encoded"), "CanonicalEncodingFailed", false, "annotation cannot be encoded", `{}`},
		{"CommitProtocolMismatch", core.CommitProtocolMismatch(strings.Repeat("a", 64), strings.Repeat("b", 64)), "WorkbenchCommitProtocolMismatch", true, "backend returned a commit identity different from the canonical request", `{"actual_commit_id":"` + strings.Repeat("b", 64) + `","expected_commit_id":"` + strings.Repeat("a", 64) + `"}`},
		{"BackendProtocolMismatch", core.BackendProtocolMismatch("grep candidate cursor did not advance", map[string]any{"cursor": "c"}), "BackendProtocolMismatch", true, "grep candidate cursor did not advance", `{"cursor":"c"}`},
		{"GrepReadFenceChanged", core.GrepReadFenceChanged(), "ReadFenceChanged", true, "grep pages crossed an authoritative read fence", `{"operation":"grep"}`},
		{"GrepScanExhausted", core.GrepScanExhausted("bytes", 536870912), "ResourceExhausted", false, "grep exceeded its bounded bytes scan budget", `{"maximum":536870912,"operation":"grep","resource":"bytes"}`},

		{"Missing", core.Missing("workbench w does not exist"), "NotFound", false, "workbench w does not exist", `{"code":"NotFound","conflict":null,"current_generation":null,"source":"cairn"}`},
		{"AlreadyExists", core.AlreadyExists("outputs/a.txt already exists"), "AlreadyExists", false, "outputs/a.txt already exists", `{"code":"AlreadyExists","conflict":null,"current_generation":null,"source":"cairn"}`},
		{"Conflict", core.Conflict("generation changed", "Generation", &gen), "Conflict", true, "generation changed", `{"code":"Conflict","conflict":"Generation","current_generation":9,"source":"cairn"}`},
		{"Conflict no generation", core.Conflict("head moved", "Head", nil), "Conflict", true, "head moved", `{"code":"Conflict","conflict":"Head","current_generation":null,"source":"cairn"}`},
		{"LifecycleConflict", core.LifecycleConflict("workbench already has a different commit head; set replace=true"), "Conflict", true, "workbench already has a different commit head; set replace=true", `{}`},
		{"ReadFenceChanged", core.ReadFenceChanged("list", "Workspace"), "ReadFenceChanged", true, "list fence changed", `{"conflict":"Workspace","source":"cairn"}`},
		{"SnapshotNotFound", core.SnapshotNotFound("snapshot 7 not found"), "SnapshotNotFound", false, "snapshot 7 not found", `{"source":"cairn"}`},
		{"SnapshotExpired", core.SnapshotExpired("snapshot is not alive"), "SnapshotExpired", false, "snapshot is not alive", `{"code":"SnapshotExpired","conflict":null,"current_generation":null,"source":"cairn"}`},
		{"ForkRetentionActive", core.ForkRetentionActive("snapshot has active fork consumers"), "ForkRetentionActive", false, "snapshot has active fork consumers", `{"code":"PreconditionFailed","conflict":"SnapshotLifecycle","current_generation":null,"source":"cairn"}`},
		{"QueryRefused", core.QueryRefused("query has 65 predicates, maximum is 64"), "InvalidState", false, "query has 65 predicates, maximum is 64", `{"code":"InvalidArgument","conflict":null,"current_generation":null,"source":"cairn"}`},
		{"UnknownQueryField", core.UnknownQueryField("nope"), "InvalidState", false, "unknown query field nope", `{"code":"InvalidArgument","conflict":null,"current_generation":null,"source":"cairn"}`},
		{"InvalidState", core.InvalidState("cursor belongs to a different operation"), "InvalidState", false, "cursor belongs to a different operation", `{"source":"cairn"}`},
		{"Uncommitted", core.Uncommitted("wb-1"), "InvalidState", false, "only a committed workbench can be snapshotted", `{"workbench_id":"wb-1"}`},
		{"NotDirectory", core.NotDirectory("outputs/a.txt"), "NotDirectory", false, "an exact artifact cannot be listed as a directory", `{"path":"outputs/a.txt"}`},
		{"ResourceExhausted", core.ResourceExhausted("artifact is larger than 16777216 bytes"), "ResourceExhausted", false, "artifact is larger than 16777216 bytes", `{"source":"cairn"}`},
		{"ObjectUnavailable", core.ObjectUnavailable("artifact object operation failed", true), "ObjectUnavailable", true, "artifact object operation failed", `{"source":"cairn"}`},
		{"Internal", core.Internal("broken"), "Internal", false, "broken", `{"source":"cairn"}`},
	}
	for _, tt := range tests {
		e := tt.err
		if e.Code != tt.code || e.Retryable != tt.retryable || e.Message != tt.message {
			t.Errorf("%s: got %s/%v/%q, want %s/%v/%q", tt.name, e.Code, e.Retryable, e.Message, tt.code, tt.retryable, tt.message)
		}
		d, err := core.MarshalResult(e.Envelope()["details"])
		if err != nil {
			t.Fatal(err)
		}
		if string(d) != tt.details {
			t.Errorf("%s: details %s, want %s", tt.name, d, tt.details)
		}
		if core.FromError(e) != e {
			t.Errorf("%s: FromError does not pass the error through", tt.name)
		}
	}
}

func TestRemaps(t *testing.T) {
	c := core.Conflict("head moved", "Head", nil)
	r := core.CommitConflict(c)
	if r.Code != core.CodeWorkbenchCommitConflict || r.Message != c.Message || r.Retryable != c.Retryable || !reflect.DeepEqual(r.Details, c.Details) {
		t.Fatalf("CommitConflict(%+v) = %+v", c, r)
	}
	if c.Code != core.CodeConflict {
		t.Fatal("CommitConflict changed its argument")
	}
	nf := core.Missing("x")
	if core.CommitConflict(nf) != nf || core.RestoreProtocolMismatch(nf) != nf {
		t.Fatal("remaps changed an error of another code")
	}
	if core.CommitConflict(nil) != nil || core.RestoreProtocolMismatch(nil) != nil {
		t.Fatal("remaps of nil")
	}
}

func TestFromError(t *testing.T) {
	wrapped := core.NoMatch("outputs/a")
	tests := []struct {
		name      string
		err       error
		code      string
		retryable bool
	}{
		{"unknown outcome", fmt.Errorf("%w: sequence 4 (%w)", head.ErrUnknownOutcome, bucket.ErrAmbiguous), "UnknownOutcome", true},
		{"retryable contention", fmt.Errorf("%w after 8 attempts: %w", head.ErrRetryable, bucket.ErrPrecondition), "Conflict", true},
		{"retryable throttled", fmt.Errorf("%w after 8 attempts: %w", head.ErrRetryable, bucket.ErrThrottled), "ObjectUnavailable", true},
		{"retryable unavailable", fmt.Errorf("%w after 8 attempts: %w", head.ErrRetryable, bucket.ErrUnavailable), "ObjectUnavailable", true},
		{"retryable ambiguous", fmt.Errorf("%w after 8 attempts: %w", head.ErrRetryable, bucket.ErrAmbiguous), "ObjectUnavailable", true},
		{"deadline", fmt.Errorf("mem: get %q: %w", "k", context.DeadlineExceeded), "Timeout", true},
		{"cancelled", fmt.Errorf("mem: get %q: %w", "k", context.Canceled), "Cancelled", true},
		{"ambiguous write", fmt.Errorf("s3: put %q: %w", "k", bucket.ErrAmbiguous), "UnknownOutcome", true},
		{"throttled", fmt.Errorf("s3: get %q: %w", "k", bucket.ErrThrottled), "ObjectUnavailable", true},
		{"unavailable", fmt.Errorf("gcs: get %q: %w", "k", bucket.ErrUnavailable), "ObjectUnavailable", true},
		{"missing object", fmt.Errorf("mem: get %q: %w", "k", bucket.ErrNotExist), "ObjectUnavailable", false},
		{"integrity", fmt.Errorf("shards: load: %w", manifests.ErrIntegrity), "InvalidState", false},
		{"request reused", fmt.Errorf("%w: %q", head.ErrRequestReused, "r"), "InvalidState", false},
		{"schema", head.ErrSchemaMismatch, "InvalidState", false},
		{"bad head", head.ErrBadHead, "InvalidState", false},
		{"closed", head.ErrClosed, "Internal", true},
		{"other", errors.New("boom"), "Internal", false},
		{"denied", fmt.Errorf("head: stage: file: put %q: %w: %w", "k", bucket.ErrDenied, errors.New("permission denied")), "ObjectUnavailable", false},
		{"no space", fmt.Errorf("head: write head of sequence 3: file: put %q: %w", "k", bucket.ErrNoSpace), "ObjectUnavailable", false},
		{"no bucket", fmt.Errorf("s3: put %q: %w", "k", bucket.ErrNoBucket), "ObjectUnavailable", false},
		{"rolled back", fmt.Errorf("%w: shard x: sequence 3, seen 5", head.ErrHeadRolledBack), "InvalidState", false},
		{"unknown outcome despite a refusal", fmt.Errorf("%w: sequence 4 (%w)", head.ErrUnknownOutcome, bucket.ErrDenied), "UnknownOutcome", true},
	}
	for _, tt := range tests {
		e := core.FromError(tt.err)
		if e == nil || e.Code != tt.code || e.Retryable != tt.retryable {
			t.Errorf("%s: FromError = %+v, want %s retryable=%v", tt.name, e, tt.code, tt.retryable)
			continue
		}
		if e.Details["source"] != core.Source {
			t.Errorf("%s: details %v lack source %q", tt.name, e.Details, core.Source)
		}
		if !errors.Is(e, tt.err) {
			t.Errorf("%s: the mapped error does not unwrap to its cause", tt.name)
		}
		if e.Message == "" {
			t.Errorf("%s: empty message", tt.name)
		}
	}
	if e := core.FromError(errors.New("boom")); e.Message != "internal error: boom" {
		t.Errorf("Internal message %q", e.Message)
	}
	if core.FromError(nil) != nil {
		t.Error("FromError(nil) != nil")
	}
	if core.FromError(wrapped) != wrapped {
		t.Error("FromError does not pass an *Error through")
	}
	// An *Error inside a chain wins over every sentinel beside it.
	chain := fmt.Errorf("edit: %w: %w", wrapped, context.Canceled)
	if core.FromError(chain) != wrapped {
		t.Error("FromError does not find a wrapped *Error")
	}
	// errors.Is still sees through a mapped error to its cause.
	if e := core.FromError(fmt.Errorf("x: %w", bucket.ErrThrottled)); !errors.Is(e, bucket.ErrThrottled) {
		t.Error("mapped error lost its cause")
	}
}

func TestMarshalResult(t *testing.T) {
	type point struct {
		X int    `json:"x"`
		Y string `json:"y"`
	}
	var nilSlice []any
	var nilMap map[string]any
	var nilPtr *int
	one := 1
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"null", nil, `null`},
		{"nil pointer", nilPtr, `null`},
		{"pointer", &one, `1`},
		{"nil slice", nilSlice, `[]`},
		{"nil map", nilMap, `{}`},
		{"empty", map[string]any{"a": []string{}, "b": map[string]int{}}, `{"a":[],"b":{}}`},
		{"sorted keys", map[string]any{"z": 1, "a": 2, "B": 3, "é": 4, "aa": 5, "": 6}, `{"":6,"B":3,"a":2,"aa":5,"z":1,"é":4}`},
		{"nested", map[string]any{"k": []any{map[string]any{"b": nil, "a": true}}}, `{"k":[{"a":true,"b":null}]}`},
		{"escaping", "\"\\/<>&\u2028\u2029\u007f\b\f\n\r\t\x00\x01\x1f é😀", `"\"\\/<>&` + "\u2028\u2029\u007f" + `\b\f\n\r\t\u0000\u0001\u001f é😀"`},
		{"invalid utf8", "a\xffb", "\"a\uFFFDb\""},
		{"ints", []any{int8(-8), uint64(math.MaxUint64), int64(math.MinInt64), uint8(7)}, `[-8,18446744073709551615,-9223372036854775808,7]`},
		{"floats", []any{2.0, 0.1, -1.5, 1e21, 1e16, 1e15, 123.456, 0.00001, 0.000001, 1.5e-7, math.Copysign(0, -1), 0.0, 5e-324, math.MaxFloat64, float32(0.1)},
			`[2.0,0.1,-1.5,1e21,1e16,1000000000000000.0,123.456,0.00001,1e-6,1.5e-7,-0.0,0.0,5e-324,1.7976931348623157e308,0.1]`},
		{"numbers", []any{json.Number("1E2"), json.Number("-0"), json.Number("7"), json.Number("18446744073709551616")}, `[100.0,-0.0,7,1.8446744073709552e19]`},
		{"raw", json.RawMessage(` {"b": [1, 2.50], "a": "x"} `), `{"a":"x","b":[1,2.5]}`},
		{"bytes", []byte("hi"), `"aGk="`},
		{"struct", point{X: 1, Y: "<"}, `{"x":1,"y":"<"}`},
		{"error", core.InvalidArguments("m"), `{"code":"InvalidArguments","details":{},"message":"m","retryable":false,"status":"error"}`},
		{"typed map", map[string][]int{"b": {1}, "a": nil}, `{"a":[],"b":[1]}`},
	}
	for _, tt := range tests {
		got, err := core.MarshalResult(tt.v)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
	for _, bad := range []any{math.NaN(), math.Inf(1), json.Number("x"), json.Number(`"s"`), json.RawMessage(`{`), map[string]any{"f": math.Inf(-1)}} {
		if got, err := core.MarshalResult(bad); err == nil {
			t.Errorf("MarshalResult(%#v) = %s, want an error", bad, got)
		}
	}
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	if _, err := core.MarshalResult(cyclic); err == nil {
		t.Error("MarshalResult of a cyclic map did not fail")
	}
}

// TestFloatLayoutMatchesTheCanonicalForm checks MarshalResult's float
// printing against the canonical form of package manifests, which mirrors
// the reference: whenever the reference parser reads the printed text back
// to the same float, canonicalizing the text must not change it.
func TestFloatLayoutMatchesTheCanonicalForm(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	checked := 0
	const n = 20000
	for i := range n {
		var f float64
		switch i % 3 {
		case 0:
			f = math.Float64frombits(r.Uint64())
		case 1:
			f = float64(r.Int64N(1<<53)) * math.Pow10(r.IntN(50)-25)
		default:
			f = float64(r.IntN(100000)) / 1000
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		text, err := core.MarshalResult(f)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := strconv.ParseFloat(string(text), 64); err != nil || back != f {
			t.Fatalf("%v printed as %s, which reads back as %v", f, text, back)
		}
		canon, err := manifests.CanonicalizeJSON(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if refBack, _ := strconv.ParseFloat(string(canon), 64); refBack != f {
			continue // the reference parser does not read this text exactly
		}
		checked++
		if string(canon) != string(text) {
			t.Fatalf("%v: printed %s, canonical form %s", f, text, canon)
		}
	}
	if checked < n/2 {
		t.Fatalf("only %d of %d floats checked", checked, n)
	}
}

// The transcript's stat and find results, as the reference pretty-prints
// each one.
const transcriptStat = `{
  "at_snapshot": "frozen",
  "card": {
    "content_type": "text/plain",
    "digest_uri": "sha256:39bf1d4f770003e2f81ee75759c78615edccb6831dadd4c617d044350d2d73ef",
    "entry_count": null,
    "generation": 3,
    "kind": "file",
    "manifest_id": null,
    "name": "report.txt",
    "path": "/agents/test/wb/wb-main/outputs/report.txt",
    "producer": "test-agent",
    "record_count": null,
    "relative_path": "report.txt",
    "section": "outputs",
    "size_bytes": 25
  },
  "path": "/agents/test/wb/wb-main/outputs/report.txt",
  "relative_path": "report.txt",
  "section": "outputs",
  "status": "success",
  "workbench_id": "wb-main",
  "workbench_path": "/agents/test/wb/wb-main"
}`

const transcriptCatalog = `{
  "catalog": {
    "facetable": [
      "artifact.producer"
    ],
    "facets": [],
    "filterable": [
      {
        "fields": [
          "artifact.producer"
        ],
        "operators": [
          "eq",
          "prefix"
        ]
      }
    ],
    "sortable": [
      "artifact.producer"
    ]
  },
  "catalog_empty": false,
  "child_catalogs": [],
  "path": "/agents/test/wb",
  "status": "success"
}`

func TestMarshalResultIndentMatchesTheTranscript(t *testing.T) {
	stat := map[string]any{
		"status":         "success",
		"workbench_id":   "wb-main",
		"workbench_path": core.WorkbenchPath("/agents/test/wb", "wb-main"),
		"section":        "outputs",
		"relative_path":  "report.txt",
		"path":           core.PresentationPath("/agents/test/wb", "wb-main", []string{"outputs", "report.txt"}),
		"at_snapshot":    "frozen",
		"card": map[string]any{
			"name": "report.txt", "path": "/agents/test/wb/wb-main/outputs/report.txt", "section": "outputs",
			"relative_path": "report.txt", "kind": "file", "size_bytes": uint64(25), "entry_count": nil,
			"record_count": nil, "generation": uint64(3), "content_type": "text/plain",
			"digest_uri":  "sha256:39bf1d4f770003e2f81ee75759c78615edccb6831dadd4c617d044350d2d73ef",
			"producer":    "test-agent",
			"manifest_id": nil,
		},
	}
	catalog := map[string]any{
		"status": "success", "path": "/agents/test/wb", "catalog_empty": false, "child_catalogs": []any{},
		"catalog": map[string]any{
			"filterable": []any{map[string]any{"operators": []string{"eq", "prefix"}, "fields": []string{"artifact.producer"}}},
			"sortable":   []string{"artifact.producer"},
			"facetable":  []string{"artifact.producer"},
			"facets":     []any(nil),
		},
	}
	for _, tt := range []struct {
		v    any
		want string
	}{{stat, transcriptStat}, {catalog, transcriptCatalog}} {
		got, err := core.MarshalResultIndent(tt.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("pretty result\n got %s\nwant %s", got, tt.want)
		}
		c, _ := core.MarshalResult(tt.v)
		if string(c) != compact(t, tt.want) {
			t.Errorf("compact result\n got %s\nwant %s", c, compact(t, tt.want))
		}
	}
	// Strings holding structural characters are copied, not laid out.
	got, _ := core.MarshalResultIndent(map[string]any{"a": "{[,:]}\"", "b": []any{"x\\"}})
	if want := "{\n  \"a\": \"{[,:]}\\\"\",\n  \"b\": [\n    \"x\\\\\"\n  ]\n}"; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
