package nokv_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/nokv"
)

// Fixture ids: each a repeated byte, so the golden hex below is legible.
func fill16(b byte) (v [16]byte) {
	for i := range v {
		v[i] = b
	}
	return v
}

func fill32(b byte) (v [32]byte) {
	for i := range v {
		v[i] = b
	}
	return v
}

var (
	tRoot    = nokv.RootID(fill16(0x11))
	tInc     = nokv.IncarnationID(fill16(0x22))
	tRev     = nokv.RevisionID(fill16(0x33))
	tOp      = nokv.OperationID(fill16(0x44))
	tCommit  = nokv.CommitID(fill32(0x55))
	tChild   = nokv.RevisionID(fill16(0x66))
	tPath    = []string{"outputs", "a.txt"}
	digestAB = "sha256:" + strings.Repeat("ab", 32)
	digestCD = "sha256:" + strings.Repeat("cd", 32)
	digestEF = "sha256:" + strings.Repeat("ef", 32)
)

func ptr[T any](v T) *T { return &v }

// hx joins hex pieces, ignoring spaces, and decodes them.
func hx(t testing.TB, parts ...string) []byte {
	t.Helper()
	s := strings.ReplaceAll(strings.Join(parts, ""), " ", "")
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad golden hex %q: %v", s, err)
	}
	return b
}

// rep repeats a hex byte n times.
func rep(b string, n int) string { return strings.Repeat(b, n) }

// lp is the hex of a u32-length-prefixed string.
func lp(s string) string { return fmt.Sprintf("%08x", len(s)) + hex.EncodeToString([]byte(s)) }

// ascii is the hex of raw bytes.
func ascii(s string) string { return hex.EncodeToString([]byte(s)) }

// Hex of the ordered path "outputs" NUL "a.txt": each byte plus one.
const orderedPath = "70767571767574 00 622f757975"

// record is one value type under test: its fixture, encoder and decoder.
type record struct {
	name   string
	value  any
	encode func(any) ([]byte, error)
	decode func([]byte) (any, error)
	golden func(t testing.TB) []byte
}

func codec[T interface{ Encode() ([]byte, error) }](dec func([]byte) (T, error)) (func(any) ([]byte, error), func([]byte) (any, error)) {
	return func(v any) ([]byte, error) { return v.(T).Encode() },
		func(b []byte) (any, error) { return dec(b) }
}

func newRecord[T interface{ Encode() ([]byte, error) }](name string, v T, dec func([]byte) (T, error), golden func(t testing.TB) []byte) record {
	enc, d := codec(dec)
	return record{name: name, value: v, encode: enc, decode: d, golden: golden}
}

var (
	fxWorkspace = nokv.WorkspaceCurrent{
		Incarnation: tInc, WorkspaceRevision: 7, State: nokv.WorkspaceStateStaging,
		Owner:          &nokv.OperationRef{Kind: nokv.OperationKindRestore, ID: tOp},
		CreatedVersion: 3, ModifiedVersion: 9,
	}
	fxClaim     = nokv.WorkspaceIncarnationClaim{WorkbenchID: "wb-1"}
	fxPathEntry = nokv.PathEntry{
		Generation: 5, Revision: tRev, LogicalSize: 1024,
		BodyDigestURI: digestAB, ManifestDigestURI: digestCD,
		DependencyCount: 2, DependencyDepth: 1, ContentType: "text/plain",
		Producer: ptr("agent"), ManifestID: nil, CreatedVersion: 3, ModifiedVersion: 9,
		Index: nokv.IndexProjection{
			{ID: "logical_size", Value: nokv.UnsignedScalar(1024)},
			{ID: "tag", Value: nokv.StringScalar("a\x00b")},
		},
	}
	fxRevision = nokv.ArtifactRevision{
		LogicalSize: 1024, BodyDigestURI: digestAB, ManifestDigestURI: digestCD,
		BlockCount: 3, DependencyCount: 2, DependencyDepth: 1, DependencyDigest: fill32(0x77),
		ContentType: "text/plain", State: nokv.RevisionStateAvailable,
		ReferenceEpoch: 4, StrongReferenceCount: 1, LastZeroRefVersion: 0, CreatedVersion: 3,
	}
	fxManifest = nokv.ArtifactManifestEntry{
		PhysicalOwner: tChild, PhysicalObjectIndex: 2, ObjectKey: "artifacts/x/blocks/2",
		LogicalOffset: 4096, ObjectOffset: 0, Length: 4096, DigestURI: digestAB,
		Append: &nokv.AppendSegment{BaseGeneration: 4, DeltaOffset: 4096, DeltaLength: 100, DeltaDigestURI: digestEF},
	}
	fxRef         = nokv.RevisionRef{ReferenceEpochAtAdd: 4, CreatedVersion: 9}
	fxGcCandidate = nokv.GcCandidate{LastZeroRefVersion: 12, Claim: nokv.GcClaimStateQuarantined, Attempts: 2, Evidence: ptr("ambiguous delete")}
	fxEvent       = nokv.ChangeEvent{
		WorkbenchID: "wb-1", Incarnation: tInc, Kind: nokv.ChangeEventKindPathReplaced, Path: tPath,
		Before: &nokv.EventProjection{Generation: 4, Revision: tChild, LogicalSize: 10, DigestURI: digestAB},
		After:  &nokv.EventProjection{Generation: 5, Revision: tRev, LogicalSize: 20, DigestURI: digestCD},
	}
	fxPublish = nokv.PublishOperation{
		Phase: nokv.PublishPhasePublished, InputDigest: fill32(0x88), WorkbenchID: "wb-1",
		Incarnation: tInc, Path: tPath, Revision: tRev, ExpectedGeneration: ptr(uint64(4)),
		ObjectCount: 1, CleanupCursor: 0,
		Result: &nokv.PublishResult{Generation: 5, WorkspaceRevision: 8, CommitVersion: 9},
	}
	fxStaged = nokv.StagedObject{
		Revision: tRev, ObjectKey: "k", UploadID: ptr("up-1"), ExpectedLength: 20,
		ExpectedDigestURI: digestAB, Provider: nokv.StagedProviderStateUploaded, Cleanup: nokv.StagedCleanupStateOwned,
	}
	fxIndexEntry = nokv.SecondaryIndexEntry{PathGeneration: 5, Revision: tRev}
)

func records() []record {
	return []record{
		newRecord("WorkspaceCurrent", fxWorkspace, nokv.DecodeWorkspaceCurrent, func(t testing.TB) []byte {
			return hx(t,
				"02",               // value version
				rep("22", 16),      // incarnation
				"0000000000000007", // workspace_revision
				"01",               // state Staging
				"01", "03",         // owner present, kind Restore
				rep("44", 16),      // owner operation id
				"0000000000000003", // created_version
				"0000000000000009") // modified_version
		}),
		newRecord("WorkspaceIncarnationClaim", fxClaim, nokv.DecodeWorkspaceIncarnationClaim, func(t testing.TB) []byte {
			return hx(t, "01", "00000004 77622d31")
		}),
		newRecord("PathEntry", fxPathEntry, nokv.DecodePathEntry, func(t testing.TB) []byte {
			return hx(t,
				"02",               // value version
				"0000000000000005", // generation
				rep("33", 16),      // artifact_revision_id
				"0000000000000400", // logical_size
				lp(digestAB),       // body_digest_uri
				lp(digestCD),       // manifest_digest_uri
				"00000002",         // dependency_count
				"00000001",         // dependency_depth
				lp("text/plain"),   // content_type
				"01", lp("agent"),  // producer
				"00",               // manifest_id absent
				"0000000000000003", // created_version
				"0000000000000009", // modified_version
				"0002",             // two index fields
				"0c", ascii("logical_size"), "04 0000000000000400",
				"03", ascii("tag"), "08 61 00ff 62 0000")
		}),
		newRecord("ArtifactRevision", fxRevision, nokv.DecodeArtifactRevision, func(t testing.TB) []byte {
			return hx(t,
				"02",
				"0000000000000400", // logical_size
				lp(digestAB), lp(digestCD),
				"0000000000000003", // block_count
				"00000002",         // dependency_count
				"00000001",         // dependency_depth
				rep("77", 32),      // dependency_digest
				lp("text/plain"),
				"01",               // Available
				"0000000000000004", // reference_epoch
				"0000000000000001", // strong_reference_count
				"0000000000000000", // last_zero_ref_version
				"0000000000000003") // created_version
		}),
		newRecord("ArtifactManifestEntry", fxManifest, nokv.DecodeArtifactManifestEntry, func(t testing.TB) []byte {
			return hx(t,
				"01",
				rep("66", 16),      // physical owner
				"0000000000000002", // physical_object_index
				lp("artifacts/x/blocks/2"),
				"0000000000001000", // logical_offset
				"0000000000000000", // object_offset
				"0000000000001000", // length
				lp(digestAB),       // digest_uri
				"01",               // append segment present
				"0000000000000004", // base_generation
				"0000000000001000", // delta_offset
				"0000000000000064", // delta_length
				lp(digestEF))
		}),
		newRecord("RevisionRef", fxRef, nokv.DecodeRevisionRef, func(t testing.TB) []byte {
			return hx(t, "01", "0000000000000004", "0000000000000009")
		}),
		newRecord("GcCandidate", fxGcCandidate, nokv.DecodeGcCandidate, func(t testing.TB) []byte {
			return hx(t, "01", "000000000000000c", "04", "00000002", "01", lp("ambiguous delete"))
		}),
		newRecord("ChangeEvent", fxEvent, nokv.DecodeChangeEvent, func(t testing.TB) []byte {
			return hx(t,
				"02",
				lp("wb-1"),
				rep("22", 16),
				"03",                          // PathReplaced
				"01", "0000000d", orderedPath, // path
				"01", "0000000000000004", rep("66", 16), "000000000000000a", lp(digestAB), // before
				"01", "0000000000000005", rep("33", 16), "0000000000000014", lp(digestCD), // after
				"00", // commit absent
				"00") // snapshot absent
		}),
		newRecord("PublishOperation", fxPublish, nokv.DecodePublishOperation, func(t testing.TB) []byte {
			return hx(t,
				"01",
				"03",          // Published
				rep("88", 32), // input digest
				lp("wb-1"),
				rep("22", 16),
				"0000000d", orderedPath,
				rep("33", 16),
				"01", "0000000000000004", // expected generation
				"0000000000000001",                                               // object_count
				"0000000000000000",                                               // cleanup_cursor
				"01", "0000000000000005", "0000000000000008", "0000000000000009", // result
				"00") // no failure
		}),
		newRecord("StagedObject", fxStaged, nokv.DecodeStagedObject, func(t testing.TB) []byte {
			return hx(t, "01", rep("33", 16), lp("k"), "01", lp("up-1"), "0000000000000014", lp(digestAB), "03", "01")
		}),
		newRecord("SecondaryIndexEntry", fxIndexEntry, nokv.DecodeSecondaryIndexEntry, func(t testing.TB) []byte {
			return hx(t, "01", "0000000000000005", rep("33", 16))
		}),
	}
}

// variants are further values of each type: every optional field absent,
// other kinds and shapes.
func variants() []record {
	all := records()
	byName := map[string]record{}
	for _, r := range all {
		byName[r.name] = r
	}
	with := func(name string, v any) record {
		r := byName[name]
		r.value = v
		r.golden = nil
		return r
	}
	ws := fxWorkspace
	ws.Owner, ws.State = nil, nokv.WorkspaceStateVisible
	pe := fxPathEntry
	pe.Producer, pe.ManifestID, pe.Index = nil, ptr(""), nil
	pe2 := fxPathEntry
	pe2.Index = nokv.IndexProjection{
		{ID: "a", Value: nokv.NullScalar()},
		{ID: "b", Value: nokv.BoolScalar(true)},
		{ID: "c", Value: nokv.SignedScalar(-5)},
		{ID: "d", Value: nokv.FloatScalar(-2.5)},
		{ID: "e", Value: nokv.TimestampScalar(time.Unix(1700000000, 123))},
		{ID: "f", Value: nokv.BytesScalar([]byte{0, 1, 0xff})},
		{ID: "path", Value: nokv.StringScalar("outputs/a.txt")},
	}
	man := fxManifest
	man.Append = nil
	gc := fxGcCandidate
	gc.Evidence, gc.Claim = nil, nokv.GcClaimStateCandidate
	pub := fxPublish
	pub.ExpectedGeneration, pub.Result, pub.Phase = nil, nil, nokv.PublishPhaseCleaned
	pub.Failure = &nokv.OperationFailure{Code: "Conflict", Message: "generation changed"}
	pub2 := fxPublish
	pub2.Result, pub2.Phase = nil, nokv.PublishPhaseUploading
	st := fxStaged
	st.UploadID = nil
	snap := nokv.SnapshotID(1 << 60)
	out := []record{
		with("WorkspaceCurrent", ws), with("PathEntry", pe), with("PathEntry", pe2),
		with("ArtifactManifestEntry", man), with("GcCandidate", gc),
		with("PublishOperation", pub), with("PublishOperation", pub2), with("StagedObject", st),
		with("ChangeEvent", nokv.ChangeEvent{WorkbenchID: "w", Incarnation: tInc, Kind: nokv.ChangeEventKindWorkspaceCreated}),
		with("ChangeEvent", nokv.ChangeEvent{WorkbenchID: "w", Incarnation: tInc, Kind: nokv.ChangeEventKindPathCreated, Path: tPath,
			After: &nokv.EventProjection{Generation: 1, Revision: tRev, LogicalSize: 3}}),
		with("ChangeEvent", nokv.ChangeEvent{WorkbenchID: "w", Incarnation: tInc, Kind: nokv.ChangeEventKindPathRemoved, Path: tPath,
			Before: &nokv.EventProjection{Generation: 1, Revision: tRev, LogicalSize: 3, DigestURI: digestAB}}),
		with("ChangeEvent", nokv.ChangeEvent{WorkbenchID: "w", Incarnation: tInc, Kind: nokv.ChangeEventKindWorkbenchCommitted,
			After: &nokv.EventProjection{Generation: 2, DigestURI: digestCD}, Commit: &tCommit}),
		with("ChangeEvent", nokv.ChangeEvent{WorkbenchID: "w", Incarnation: tInc, Kind: nokv.ChangeEventKindWorkspaceRestored, Snapshot: &snap}),
		with("ChangeEvent", nokv.ChangeEvent{WorkbenchID: "w", Incarnation: tInc, Kind: nokv.ChangeEventKindSnapshotMinted, Snapshot: &snap}),
	}
	return append(all, out...)
}

func TestRecordRoundTrip(t *testing.T) {
	for i, r := range variants() {
		t.Run(fmt.Sprintf("%s/%d", r.name, i), func(t *testing.T) {
			b, err := r.encode(r.value)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			got, err := r.decode(b)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(got, r.value) {
				t.Fatalf("round trip:\n got %#v\nwant %#v", got, r.value)
			}
			again, err := r.encode(got)
			if err != nil || !bytes.Equal(again, b) {
				t.Fatalf("re-encode = %x, %v; want %x", again, err, b)
			}
		})
	}
}

func TestRecordGolden(t *testing.T) {
	for _, r := range records() {
		t.Run(r.name, func(t *testing.T) {
			got, err := r.encode(r.value)
			if err != nil {
				t.Fatal(err)
			}
			want := r.golden(t)
			if !bytes.Equal(got, want) {
				t.Fatalf("encoding\n got %x\nwant %x", got, want)
			}
			dec, err := r.decode(want)
			if err != nil || !reflect.DeepEqual(dec, r.value) {
				t.Fatalf("decode golden = %#v, %v", dec, err)
			}
		})
	}
}

// TestValueVersions pins each record's value format version to the seed's
// Durable Format Registry.
func TestValueVersions(t *testing.T) {
	want := map[string]byte{
		"WorkspaceCurrent": 2, "PathEntry": 2, "ArtifactRevision": 2, "ChangeEvent": 2,
		"WorkspaceIncarnationClaim": 1, "ArtifactManifestEntry": 1, "RevisionRef": 1,
		"GcCandidate": 1, "PublishOperation": 1, "StagedObject": 1, "SecondaryIndexEntry": 1,
	}
	for _, r := range records() {
		b, err := r.encode(r.value)
		if err != nil {
			t.Fatal(err)
		}
		if b[0] != want[r.name] {
			t.Errorf("%s: version %d, want %d", r.name, b[0], want[r.name])
		}
	}
}

func TestDecodeRejectsUnknownVersion(t *testing.T) {
	for _, r := range records() {
		b, err := r.encode(r.value)
		if err != nil {
			t.Fatal(err)
		}
		for v := 0; v < 256; v++ {
			if byte(v) == b[0] {
				continue
			}
			c := bytes.Clone(b)
			c[0] = byte(v)
			_, err := r.decode(c)
			if !errors.Is(err, nokv.ErrUnknownVersion) || !errors.Is(err, nokv.ErrBadRecord) {
				t.Fatalf("%s with version %d: %v, want ErrUnknownVersion and ErrBadRecord", r.name, v, err)
			}
		}
	}
}

func TestDecodeRejectsTruncationAndTrailingBytes(t *testing.T) {
	for _, r := range variants() {
		b, err := r.encode(r.value)
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < len(b); n++ {
			if _, err := r.decode(b[:n]); !errors.Is(err, nokv.ErrBadRecord) {
				t.Fatalf("%s truncated to %d of %d bytes: %v", r.name, n, len(b), err)
			}
		}
		for _, tail := range []byte{0, 1, 0xff} {
			if _, err := r.decode(append(bytes.Clone(b), tail)); !errors.Is(err, nokv.ErrBadRecord) {
				t.Fatalf("%s with a trailing byte: %v", r.name, err)
			}
		}
	}
}

// enumField is one enum field of a record: two values of the record that
// differ only in it, and the size of its registry.
type enumField struct {
	name string
	a, b any
	max  int
	enc  func(any) ([]byte, error)
	dec  func([]byte) (any, error)
}

func enumFields() []enumField {
	recs := map[string]record{}
	for _, r := range records() {
		recs[r.name] = r
	}
	mk := func(rec, field string, a, b any, max int) enumField {
		return enumField{name: rec + "." + field, a: a, b: b, max: max, enc: recs[rec].encode, dec: recs[rec].decode}
	}
	ws := fxWorkspace
	ws.State = nokv.WorkspaceStateRetired
	wsOwner := fxWorkspace
	wsOwner.Owner = &nokv.OperationRef{Kind: nokv.OperationKindGc, ID: tOp}
	rv := fxRevision
	rv.State = nokv.RevisionStateDeleted
	gc := fxGcCandidate
	gc.Claim = nokv.GcClaimStateClaimed
	ev := fxEvent
	ev.Kind = nokv.ChangeEventKindPathAppended
	pub := fxPublish
	pub.Phase = nokv.PublishPhaseFinalizing
	stP := fxStaged
	stP.Provider = nokv.StagedProviderStateAmbiguous
	stC := fxStaged
	stC.Cleanup = nokv.StagedCleanupStateQuarantined
	return []enumField{
		mk("WorkspaceCurrent", "state", fxWorkspace, ws, 3),
		mk("WorkspaceCurrent", "owner kind", fxWorkspace, wsOwner, 5),
		mk("ArtifactRevision", "state", fxRevision, rv, 4),
		mk("GcCandidate", "claim", fxGcCandidate, gc, 4),
		mk("ChangeEvent", "kind", fxEvent, ev, 11),
		mk("PublishOperation", "phase", fxPublish, pub, 7),
		mk("StagedObject", "provider state", fxStaged, stP, 6),
		mk("StagedObject", "cleanup state", fxStaged, stC, 4),
	}
}

// TestDecodeRejectsUnknownEnum finds each enum field's byte by encoding two
// values that differ only there, then writes every unregistered value into
// it: decoding must fail with ErrUnknownEnum.
func TestDecodeRejectsUnknownEnum(t *testing.T) {
	for _, f := range enumFields() {
		a, err := f.enc(f.a)
		if err != nil {
			t.Fatal(err)
		}
		b, err := f.enc(f.b)
		if err != nil {
			t.Fatal(err)
		}
		off := -1
		for i := range a {
			if a[i] != b[i] {
				if off >= 0 {
					t.Fatalf("%s: encodings differ in more than one byte", f.name)
				}
				off = i
			}
		}
		if off < 0 {
			t.Fatalf("%s: encodings do not differ", f.name)
		}
		for v := 0; v < 256; v++ {
			c := bytes.Clone(a)
			c[off] = byte(v)
			_, err := f.dec(c)
			if v >= 1 && v <= f.max {
				// A registered value may still break another rule (an
				// event kind that does not fit the event's fields).
				if errors.Is(err, nokv.ErrUnknownEnum) {
					t.Errorf("%s = %d: %v", f.name, v, err)
				}
				continue
			}
			if !errors.Is(err, nokv.ErrUnknownEnum) || !errors.Is(err, nokv.ErrBadRecord) {
				t.Errorf("%s = %d: %v, want ErrUnknownEnum", f.name, v, err)
			}
		}
	}
}

func TestEncodeRejectsUnknownEnum(t *testing.T) {
	for _, f := range enumFields() {
		bad := reflect.ValueOf(f.a)
		cp := reflect.New(bad.Type()).Elem()
		cp.Set(bad)
		// Find the field that differs between a and b and set it to max+1.
		av, bv := reflect.ValueOf(f.a), reflect.ValueOf(f.b)
		set := false
		for i := 0; i < av.NumField(); i++ {
			if !reflect.DeepEqual(av.Field(i).Interface(), bv.Field(i).Interface()) {
				fld := cp.Field(i)
				if fld.Kind() == reflect.Pointer {
					// OperationRef: set its kind.
					ref := *(fld.Interface().(*nokv.OperationRef))
					ref.Kind = nokv.OperationKind(f.max + 1)
					fld.Set(reflect.ValueOf(&ref))
				} else {
					fld.SetUint(uint64(f.max + 1))
				}
				set = true
			}
		}
		if !set {
			t.Fatalf("%s: no differing field", f.name)
		}
		if _, err := f.enc(cp.Interface()); !errors.Is(err, nokv.ErrUnknownEnum) || !errors.Is(err, nokv.ErrBadRecord) {
			t.Errorf("%s = %d: encode %v, want ErrUnknownEnum", f.name, f.max+1, err)
		}
	}
}

// TestFieldRules checks the rules a field must keep, on encode and on
// decode of bytes that break them.
func TestFieldRules(t *testing.T) {
	longCT := strings.Repeat("x", 256)
	cases := []struct {
		name  string
		value any
	}{
		{"digest not sha256", func() any { v := fxPathEntry; v.BodyDigestURI = "md5:" + strings.Repeat("ab", 32); return v }()},
		{"digest upper case", func() any { v := fxPathEntry; v.ManifestDigestURI = "sha256:" + strings.Repeat("AB", 32); return v }()},
		{"digest short", func() any { v := fxRevision; v.BodyDigestURI = "sha256:ab"; return v }()},
		{"content type empty", func() any { v := fxPathEntry; v.ContentType = ""; return v }()},
		{"content type long", func() any { v := fxRevision; v.ContentType = longCT; return v }()},
		{"content type NUL", func() any { v := fxPathEntry; v.ContentType = "a\x00b"; return v }()},
		{"producer not UTF-8", func() any { v := fxPathEntry; v.Producer = ptr("\xff"); return v }()},
		{"index unsorted", func() any {
			v := fxPathEntry
			v.Index = nokv.IndexProjection{{ID: "b", Value: nokv.NullScalar()}, {ID: "a", Value: nokv.NullScalar()}}
			return v
		}()},
		{"index duplicate", func() any {
			v := fxPathEntry
			v.Index = nokv.IndexProjection{{ID: "a", Value: nokv.NullScalar()}, {ID: "a", Value: nokv.NullScalar()}}
			return v
		}()},
		{"index empty id", func() any {
			v := fxPathEntry
			v.Index = nokv.IndexProjection{{ID: "", Value: nokv.NullScalar()}}
			return v
		}()},
		{"index NaN", func() any {
			v := fxPathEntry
			v.Index = nokv.IndexProjection{{ID: "f", Value: nokv.FloatScalar(math.NaN())}}
			return v
		}()},
		{"object key empty", func() any { v := fxManifest; v.ObjectKey = ""; return v }()},
		{"object key newline", func() any { v := fxStaged; v.ObjectKey = "a\nb"; return v }()},
		{"append digest", func() any {
			v := fxManifest
			v.Append = &nokv.AppendSegment{DeltaDigestURI: "x"}
			return v
		}()},
		{"claim bad id", nokv.WorkspaceIncarnationClaim{WorkbenchID: "-x"}},
		{"claim long id", nokv.WorkspaceIncarnationClaim{WorkbenchID: strings.Repeat("a", 129)}},
		{"event bad id", func() any { v := fxEvent; v.WorkbenchID = "a.b"; return v }()},
		{"event path kind without path", func() any { v := fxEvent; v.Path = nil; return v }()},
		{"event workspace kind with path", func() any {
			v := fxEvent
			v.Kind = nokv.ChangeEventKindWorkspaceCreated
			v.Before, v.After = nil, nil
			return v
		}()},
		{"event replaced without before", func() any { v := fxEvent; v.Before = nil; return v }()},
		{"event created with before", func() any { v := fxEvent; v.Kind = nokv.ChangeEventKindPathCreated; return v }()},
		{"event path kind with commit", func() any { v := fxEvent; v.Commit = &tCommit; return v }()},
		{"event committed without commit", nokv.ChangeEvent{WorkbenchID: "w", Kind: nokv.ChangeEventKindWorkbenchCommitted}},
		{"event restored with both", nokv.ChangeEvent{WorkbenchID: "w", Kind: nokv.ChangeEventKindWorkspaceRestored, Commit: &tCommit, Snapshot: ptr(nokv.SnapshotID(1))}},
		{"event restored with neither", nokv.ChangeEvent{WorkbenchID: "w", Kind: nokv.ChangeEventKindWorkspaceRestored}},
		{"event bad projection digest", func() any { v := fxEvent; v.After = &nokv.EventProjection{DigestURI: "sha256:"}; return v }()},
		{"event path with dot", func() any { v := fxEvent; v.Path = []string{"a", ".."}; return v }()},
		{"event path with slash", func() any { v := fxEvent; v.Path = []string{"a/b"}; return v }()},
		{"event empty path", func() any { v := fxEvent; v.Path = []string{}; return v }()},
		{"publish result and failure", func() any {
			v := fxPublish
			v.Failure = &nokv.OperationFailure{Code: "x"}
			return v
		}()},
		{"publish path backslash", func() any { v := fxPublish; v.Path = []string{"a\\b"}; return v }()},
		{"publish no path", func() any { v := fxPublish; v.Path = nil; return v }()},
		{"staged digest", func() any { v := fxStaged; v.ExpectedDigestURI = ""; return v }()},
	}
	encs := map[string]record{}
	for _, r := range records() {
		encs[reflect.TypeOf(r.value).Name()] = r
	}
	for _, c := range cases {
		r, ok := encs[reflect.TypeOf(c.value).Name()]
		if !ok {
			t.Fatalf("%s: no codec for %T", c.name, c.value)
		}
		if _, err := r.encode(c.value); !errors.Is(err, nokv.ErrBadRecord) {
			t.Errorf("%s: encode %v, want ErrBadRecord", c.name, err)
		}
	}
}

// TestDecodeRejectsBrokenRules builds bytes that break a rule the encoder
// would refuse to write, and checks the decoder refuses them too.
func TestDecodeRejectsBrokenRules(t *testing.T) {
	cases := []struct {
		name string
		b    []byte
		dec  func([]byte) error
	}{
		{"presence byte 2", hx(t, "02", rep("22", 16), "0000000000000007", "01", "02", "03", rep("44", 16), "0000000000000003", "0000000000000009"),
			func(b []byte) error { _, err := nokv.DecodeWorkspaceCurrent(b); return err }},
		// The last field: read as "absent", nothing would be left over.
		{"presence byte 2 at the end", hx(t, "01", "000000000000000c", "04", "00000002", "02"),
			func(b []byte) error {
				if _, err := nokv.DecodeGcCandidate(hx(t, "01", "000000000000000c", "04", "00000002", "00")); err != nil {
					return fmt.Errorf("valid candidate refused: %v", err)
				}
				_, err := nokv.DecodeGcCandidate(b)
				return err
			}},
		{"claim bad id", hx(t, "01", lp("a.b")),
			func(b []byte) error { _, err := nokv.DecodeWorkspaceIncarnationClaim(b); return err }},
		{"claim id length overruns", hx(t, "01", "00000009 6162"),
			func(b []byte) error { _, err := nokv.DecodeWorkspaceIncarnationClaim(b); return err }},
		{"manifest bad digest", hx(t, "01", rep("66", 16), "0000000000000002", lp("k"), rep("00", 24), lp("sha256:00"), "00"),
			func(b []byte) error { _, err := nokv.DecodeArtifactManifestEntry(b); return err }},
		{"manifest key not UTF-8", hx(t, "01", rep("66", 16), "0000000000000002", "00000001 ff", rep("00", 24), lp(digestAB), "00"),
			func(b []byte) error { _, err := nokv.DecodeArtifactManifestEntry(b); return err }},
		{"event unordered path byte", hx(t, "02", lp("w"), rep("22", 16), "02", "01", "00000002 6101", "00", "01", rep("00", 32), lp(""), "00", "00"),
			func(b []byte) error { _, err := nokv.DecodeChangeEvent(b); return err }},
		{"event path dot-dot", hx(t, "02", lp("w"), rep("22", 16), "02", "01", "00000002 2f2f", "00", "01", rep("00", 32), lp(""), "00", "00"),
			func(b []byte) error { _, err := nokv.DecodeChangeEvent(b); return err }},
		{"event shape", hx(t, "02", lp("w"), rep("22", 16), "01", "00", "00", "00", "00", "00"),
			func(b []byte) error {
				// WorkspaceCreated with nothing else is fine; kind PathCreated
				// without a path is not.
				if _, err := nokv.DecodeChangeEvent(b); err != nil {
					return fmt.Errorf("valid event refused: %v", err)
				}
				c := bytes.Clone(b)
				c[1+4+1+16] = 2
				_, err := nokv.DecodeChangeEvent(c)
				return err
			}},
	}
	for _, c := range cases {
		if err := c.dec(c.b); !errors.Is(err, nokv.ErrBadRecord) {
			t.Errorf("%s: %v, want ErrBadRecord", c.name, err)
		}
	}
	// The projection decoder refuses what its encoder refuses.
	pe, err := fxPathEntry.Encode()
	if err != nil {
		t.Fatal(err)
	}
	// Swap the two field ids' order by renaming "tag" to "log": l < l...
	// ("logical_size" > "log"), so the ids are no longer ascending.
	i := bytes.Index(pe, []byte("\x03tag"))
	bad := bytes.Clone(pe)
	copy(bad[i+1:], "log")
	if _, err := nokv.DecodePathEntry(bad); !errors.Is(err, nokv.ErrBadRecord) {
		t.Errorf("unsorted projection: %v", err)
	}
}

// ---------------------------------------------------------------------------
// Keys

type keyCase struct {
	name string
	key  interface {
		Encode() ([]byte, error)
		Family() shards.Family
	}
	golden func(t testing.TB) []byte
	parse  func([]byte) (any, error)
	// shardKey is the part of the key that must select its shard.
	shardKey func(t testing.TB) []byte
}

func keyCases() []keyCase {
	root := rep("11", 16)
	return []keyCase{
		{"WorkspaceCurrent", nokv.WorkspaceCurrentKey{Root: tRoot, WorkbenchID: "wb-1"},
			func(t testing.TB) []byte { return hx(t, root, lp("wb-1")) },
			func(b []byte) (any, error) { return nokv.ParseWorkspaceCurrentKey(b) }, nil},
		{"WorkspaceIncarnationClaim", nokv.WorkspaceIncarnationClaimKey{Root: tRoot, Incarnation: tInc},
			func(t testing.TB) []byte { return hx(t, root, rep("22", 16)) },
			func(b []byte) (any, error) { return nokv.ParseWorkspaceIncarnationClaimKey(b) }, nil},
		{"PathCurrent", nokv.PathCurrentKey{Root: tRoot, Incarnation: tInc, Path: tPath},
			func(t testing.TB) []byte { return hx(t, root, rep("22", 16), orderedPath, "01") },
			func(b []byte) (any, error) { return nokv.ParsePathCurrentKey(b) },
			func(t testing.TB) []byte { return hx(t, root, rep("22", 16), "70767571767574 00") }},
		{"ArtifactRevision", nokv.ArtifactRevisionKey{Root: tRoot, Revision: tRev},
			func(t testing.TB) []byte { return hx(t, root, rep("33", 16)) },
			func(b []byte) (any, error) { return nokv.ParseArtifactRevisionKey(b) }, nil},
		{"ArtifactManifest", nokv.ArtifactManifestKey{Root: tRoot, Revision: tRev, ObjectIndex: 2},
			func(t testing.TB) []byte { return hx(t, root, rep("33", 16), "0000000000000002") },
			func(b []byte) (any, error) { return nokv.ParseArtifactManifestKey(b) },
			func(t testing.TB) []byte { return hx(t, root, rep("33", 16)) }},
		{"RevisionRef/Path", nokv.PathRefKey(tRoot, tInc, tPath, tRev),
			func(t testing.TB) []byte {
				return hx(t, root, "01", rep("22", 16), "0000000d", orderedPath, rep("33", 16))
			},
			func(b []byte) (any, error) { return nokv.ParseRevisionRefKey(b) },
			func(t testing.TB) []byte { return hx(t, root, "01", rep("22", 16), "0000000d", orderedPath) }},
		{"RevisionRef/Commit", nokv.CommitRefKey(tRoot, tCommit, tRev),
			func(t testing.TB) []byte { return hx(t, root, "02", rep("55", 32), rep("33", 16)) },
			func(b []byte) (any, error) { return nokv.ParseRevisionRefKey(b) },
			func(t testing.TB) []byte { return hx(t, root, "02", rep("55", 32)) }},
		{"RevisionRef/RevisionDependency", nokv.DependencyRefKey(tRoot, tChild, tRev),
			func(t testing.TB) []byte { return hx(t, root, "03", rep("66", 16), rep("33", 16)) },
			func(b []byte) (any, error) { return nokv.ParseRevisionRefKey(b) },
			func(t testing.TB) []byte { return hx(t, root, "03", rep("66", 16)) }},
		{"GcCandidate", nokv.GcCandidateKey{Root: tRoot, Revision: tRev, ReferenceEpoch: 4},
			func(t testing.TB) []byte { return hx(t, root, rep("33", 16), "0000000000000004") },
			func(b []byte) (any, error) { return nokv.ParseGcCandidateKey(b) }, nil},
		{"ChangeEvent", nokv.ChangeEventKey{Root: tRoot, CommitVersion: 300, Sequence: 2},
			func(t testing.TB) []byte { return hx(t, root, "000000000000012c", "00000002") },
			func(b []byte) (any, error) { return nokv.ParseChangeEventKey(b) },
			func(t testing.TB) []byte { return hx(t, root, "0000000000000001") }},
		{"Operation", nokv.OperationKey{Root: tRoot, Kind: nokv.OperationKindPublish, ID: tOp},
			func(t testing.TB) []byte { return hx(t, root, "01", rep("44", 16)) },
			func(b []byte) (any, error) { return nokv.ParseOperationKey(b) }, nil},
		{"StagedObject", nokv.StagedObjectKey{Root: tRoot, Operation: tOp, Sequence: 1},
			func(t testing.TB) []byte { return hx(t, root, rep("44", 16), "0000000000000001") },
			func(b []byte) (any, error) { return nokv.ParseStagedObjectKey(b) },
			func(t testing.TB) []byte { return hx(t, root, rep("44", 16)) }},
		{"SecondaryIndex", nokv.SecondaryIndexKey{Root: tRoot, IndexID: "content_type",
			Value: nokv.StringScalar("text/plain"), Incarnation: tInc, Path: tPath},
			func(t testing.TB) []byte {
				return hx(t, root, lp("content_type"), "08", ascii("text/plain"), "0000", rep("22", 16), orderedPath, "01")
			},
			func(b []byte) (any, error) { return nokv.ParseSecondaryIndexKey(b) },
			func(t testing.TB) []byte { return hx(t, root, lp("content_type")) }},
	}
}

func TestKeyGoldenRoundTripAndShard(t *testing.T) {
	for _, c := range keyCases() {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.key.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if want := c.golden(t); !bytes.Equal(got, want) {
				t.Fatalf("key\n got %x\nwant %x", got, want)
			}
			if _, err := nokv.Families().ShardOf(c.key.Family(), got); err != nil {
				t.Fatalf("ShardOf(%v): %v", c.key.Family(), err)
			}
			sk, err := nokv.Families().ShardKey(c.key.Family(), got)
			if err != nil {
				t.Fatal(err)
			}
			want := got
			if c.shardKey != nil {
				want = c.shardKey(t)
			}
			if !bytes.Equal(sk, want) {
				t.Fatalf("shard key %x, want %x", sk, want)
			}
			parsed, err := c.parse(got)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if !reflect.DeepEqual(parsed, c.key) {
				t.Fatalf("parse = %#v, want %#v", parsed, c.key)
			}
			for n := 0; n < len(got); n++ {
				if _, err := c.parse(got[:n]); !errors.Is(err, nokv.ErrBadRecord) {
					t.Fatalf("parse of %d-byte prefix: %v", n, err)
				}
			}
			if _, err := c.parse(append(bytes.Clone(got), 0x01)); !errors.Is(err, nokv.ErrBadRecord) {
				t.Fatalf("parse with a trailing byte: %v", err)
			}
		})
	}
}

func TestKeyRejections(t *testing.T) {
	root := rep("11", 16)
	parseErr := []struct {
		name  string
		b     []byte
		parse func([]byte) error
		enum  bool
	}{
		{"ref kind 0", hx(t, root, "00", rep("66", 16), rep("33", 16)),
			func(b []byte) error { _, err := nokv.ParseRevisionRefKey(b); return err }, true},
		{"ref kind 4", hx(t, root, "04", rep("66", 16), rep("33", 16)),
			func(b []byte) error { _, err := nokv.ParseRevisionRefKey(b); return err }, true},
		{"operation kind 6", hx(t, root, "06", rep("44", 16)),
			func(b []byte) error { _, err := nokv.ParseOperationKey(b); return err }, true},
		{"operation kind 0", hx(t, root, "00", rep("44", 16)),
			func(b []byte) error { _, err := nokv.ParseOperationKey(b); return err }, true},
		{"workbench id bad", hx(t, root, lp("_x")),
			func(b []byte) error { _, err := nokv.ParseWorkspaceCurrentKey(b); return err }, false},
		{"path dot", hx(t, root, rep("22", 16), "2f", "01"),
			func(b []byte) error { _, err := nokv.ParsePathCurrentKey(b); return err }, false},
		{"path backslash", hx(t, root, rep("22", 16), "5d", "01"),
			func(b []byte) error { _, err := nokv.ParsePathCurrentKey(b); return err }, false},
		{"path slash", hx(t, root, rep("22", 16), "62 30 63", "01"),
			func(b []byte) error { _, err := nokv.ParsePathCurrentKey(b); return err }, false},
		{"path not terminated", hx(t, root, rep("22", 16), "62"),
			func(b []byte) error { _, err := nokv.ParsePathCurrentKey(b); return err }, false},
		{"index value unterminated", hx(t, root, lp("f"), "08 61 00"),
			func(b []byte) error { _, err := nokv.ParseSecondaryIndexKey(b); return err }, false},
		{"index unknown tag", hx(t, root, lp("f"), "09", rep("22", 16), "62 01"),
			func(b []byte) error { _, err := nokv.ParseSecondaryIndexKey(b); return err }, true},
		{"index empty id", hx(t, root, lp(""), "01", rep("22", 16), "62 01"),
			func(b []byte) error { _, err := nokv.ParseSecondaryIndexKey(b); return err }, false},
	}
	for _, c := range parseErr {
		err := c.parse(c.b)
		if !errors.Is(err, nokv.ErrBadRecord) {
			t.Errorf("%s: %v, want ErrBadRecord", c.name, err)
		}
		if c.enum != errors.Is(err, nokv.ErrUnknownEnum) {
			t.Errorf("%s: %v, ErrUnknownEnum %t", c.name, err, c.enum)
		}
	}
	encErr := []struct {
		name string
		key  interface{ Encode() ([]byte, error) }
	}{
		{"workbench id empty", nokv.WorkspaceCurrentKey{Root: tRoot}},
		{"workbench id dot", nokv.WorkspaceCurrentKey{Root: tRoot, WorkbenchID: "a.b"}},
		{"path empty", nokv.PathCurrentKey{Root: tRoot, Incarnation: tInc}},
		{"path dot-dot", nokv.PathCurrentKey{Root: tRoot, Incarnation: tInc, Path: []string{".."}}},
		{"path slash", nokv.PathCurrentKey{Root: tRoot, Incarnation: tInc, Path: []string{"a/b"}}},
		{"path too deep", nokv.PathCurrentKey{Root: tRoot, Incarnation: tInc, Path: slices.Repeat([]string{"a"}, 65)}},
		{"path too long", nokv.PathCurrentKey{Root: tRoot, Incarnation: tInc, Path: []string{strings.Repeat("a", 4097)}}},
		{"ref unknown kind", nokv.RevisionRefKey{Root: tRoot, Kind: 9, Revision: tRev}},
		{"ref stray owner", nokv.RevisionRefKey{Root: tRoot, Kind: nokv.ReferenceKindCommit, Commit: tCommit, Child: tChild, Revision: tRev}},
		{"ref path stray commit", nokv.RevisionRefKey{Root: tRoot, Kind: nokv.ReferenceKindPath, Incarnation: tInc, Path: tPath, Commit: tCommit}},
		{"ref path without path", nokv.RevisionRefKey{Root: tRoot, Kind: nokv.ReferenceKindPath, Incarnation: tInc}},
		{"operation kind 0", nokv.OperationKey{Root: tRoot}},
		{"index id empty", nokv.SecondaryIndexKey{Root: tRoot, Value: nokv.NullScalar(), Incarnation: tInc, Path: tPath}},
		{"index id long", nokv.SecondaryIndexKey{Root: tRoot, IndexID: strings.Repeat("i", 129), Value: nokv.NullScalar(), Incarnation: tInc, Path: tPath}},
		{"index no kind", nokv.SecondaryIndexKey{Root: tRoot, IndexID: "i", Incarnation: tInc, Path: tPath}},
		{"index no path", nokv.SecondaryIndexKey{Root: tRoot, IndexID: "i", Value: nokv.NullScalar(), Incarnation: tInc}},
	}
	for _, c := range encErr {
		if _, err := c.key.Encode(); !errors.Is(err, nokv.ErrBadRecord) && !errors.Is(err, shards.ErrInvalidPath) {
			t.Errorf("%s: encode %v, want an error", c.name, err)
		}
	}
}

func TestScanPrefixes(t *testing.T) {
	// A directory prefix matches its descendants, not the sibling "outputsx"
	// nor the exact row "outputs".
	pre, err := nokv.PathCurrentPrefix(tRoot, tInc, []string{"outputs"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path []string
		in   bool
	}{
		{[]string{"outputs", "a.txt"}, true},
		{[]string{"outputs", "d", "b"}, true},
		{[]string{"outputs"}, false},
		{[]string{"outputsx", "a"}, false},
	} {
		k, err := nokv.PathCurrentKey{Root: tRoot, Incarnation: tInc, Path: c.path}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.HasPrefix(k, pre); got != c.in {
			t.Errorf("%v under outputs/: %t, want %t", c.path, got, c.in)
		}
	}
	// The direct children of a directory share the directory prefix's shard.
	idx, ok := nokv.Families().PrefixShard(nokv.FamilyPathCurrent, pre)
	_ = idx
	k, _ := nokv.PathCurrentKey{Root: tRoot, Incarnation: tInc, Path: tPath}.Encode()
	want, _ := nokv.Families().ShardOf(nokv.FamilyPathCurrent, k)
	if got := shards.HashShardKey(nokv.FamilyPathCurrent, pre); got != want {
		t.Errorf("direct child in shard %d, directory prefix hashes to %d (prefix shard %d %t)", want, got, idx, ok)
	}
	whole, err := nokv.PathCurrentPrefix(tRoot, tInc, nil)
	if err != nil || !bytes.Equal(whole, hx(t, rep("11", 16), rep("22", 16))) {
		t.Errorf("whole-workspace prefix = %x, %v", whole, err)
	}
	if _, err := nokv.PathCurrentPrefix(tRoot, tInc, []string{"."}); !errors.Is(err, nokv.ErrBadRecord) {
		t.Errorf("prefix of '.': %v", err)
	}

	owner, err := nokv.PathRefKey(tRoot, tInc, tPath, tRev).OwnerPrefix()
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := nokv.Families().PrefixShard(nokv.FamilyRevisionRef, owner); !ok {
		t.Error("owner prefix does not fix one revision_ref shard")
	} else {
		k, _ := nokv.PathRefKey(tRoot, tInc, tPath, tChild).Encode()
		if want, _ := nokv.Families().ShardOf(nokv.FamilyRevisionRef, k); got != want {
			t.Errorf("owner prefix shard %d, key shard %d", got, want)
		}
	}

	for _, c := range []struct {
		f      shards.Family
		prefix []byte
		key    func() ([]byte, error)
	}{
		{nokv.FamilyArtifactManifest, nokv.ArtifactManifestPrefix(tRoot, tRev), nokv.ArtifactManifestKey{Root: tRoot, Revision: tRev, ObjectIndex: 9}.Encode},
		{nokv.FamilyStagedObject, nokv.StagedObjectPrefix(tRoot, tOp), nokv.StagedObjectKey{Root: tRoot, Operation: tOp, Sequence: 9}.Encode},
	} {
		k, err := c.key()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(k, c.prefix) {
			t.Errorf("%v: key %x lacks prefix %x", c.f, k, c.prefix)
		}
		got, ok := nokv.Families().PrefixShard(c.f, c.prefix)
		want, _ := nokv.Families().ShardOf(c.f, k)
		if !ok || got != want {
			t.Errorf("%v: prefix shard %d %t, key shard %d", c.f, got, ok, want)
		}
	}

	ip, err := nokv.SecondaryIndexPrefix(tRoot, "content_type")
	if err != nil {
		t.Fatal(err)
	}
	vp, err := nokv.SecondaryIndexValuePrefix(tRoot, "content_type", nokv.StringScalar("text/plain"))
	if err != nil {
		t.Fatal(err)
	}
	k, err = nokv.SecondaryIndexKey{Root: tRoot, IndexID: "content_type", Value: nokv.StringScalar("text/plain"), Incarnation: tInc, Path: tPath}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := nokv.SecondaryIndexKey{Root: tRoot, IndexID: "content_type", Value: nokv.StringScalar("text/plain2"), Incarnation: tInc, Path: tPath}.Encode()
	if !bytes.HasPrefix(k, vp) || !bytes.HasPrefix(vp, ip) || bytes.HasPrefix(other, vp) || !bytes.HasPrefix(other, ip) {
		t.Errorf("index prefixes: key %x value prefix %x index prefix %x", k, vp, ip)
	}
	if !bytes.Equal(nokv.RootPrefix(tRoot), tRoot[:]) {
		t.Error("RootPrefix is not the root id")
	}
}

// ---------------------------------------------------------------------------
// Ids

func TestIDs(t *testing.T) {
	r := nokv.RootID(fill16(0xab))
	if got, want := r.String(), strings.Repeat("ab", 16); got != want {
		t.Fatalf("String() = %q", got)
	}
	if p, err := nokv.ParseRootID(r.String()); err != nil || p != r {
		t.Fatalf("ParseRootID = %v, %v", p, err)
	}
	c := nokv.CommitID(fill32(0x0f))
	if p, err := nokv.ParseCommitID(c.String()); err != nil || p != c || len(c.String()) != 64 {
		t.Fatalf("ParseCommitID(%q) = %v, %v", c, p, err)
	}
	bad := []string{"", strings.Repeat("AB", 16), strings.Repeat("ab", 15), strings.Repeat("ab", 17), strings.Repeat("zz", 16),
		"0x" + strings.Repeat("ab", 15), strings.Repeat("ab", 8) + "-" + strings.Repeat("ab", 7) + "a"}
	for _, s := range bad {
		if _, err := nokv.ParseRootID(s); !errors.Is(err, nokv.ErrBadID) {
			t.Errorf("ParseRootID(%q): %v", s, err)
		}
		if _, err := nokv.ParseIncarnationID(s); !errors.Is(err, nokv.ErrBadID) {
			t.Errorf("ParseIncarnationID(%q): %v", s, err)
		}
		if _, err := nokv.ParseRevisionID(s); !errors.Is(err, nokv.ErrBadID) {
			t.Errorf("ParseRevisionID(%q): %v", s, err)
		}
		if _, err := nokv.ParseOperationID(s); !errors.Is(err, nokv.ErrBadID) {
			t.Errorf("ParseOperationID(%q): %v", s, err)
		}
	}
	if _, err := nokv.ParseCommitID(strings.Repeat("ab", 16)); !errors.Is(err, nokv.ErrBadID) {
		t.Errorf("ParseCommitID of 32 digits: %v", err)
	}
	seen := map[[16]byte]bool{}
	for range 64 {
		for _, id := range [][16]byte{[16]byte(nokv.NewRootID()), [16]byte(nokv.NewIncarnationID()),
			[16]byte(nokv.NewRevisionID()), [16]byte(nokv.NewOperationID())} {
			if seen[id] || id == [16]byte{} {
				t.Fatalf("random id %x repeated or zero", id)
			}
			seen[id] = true
		}
	}
	var inc nokv.IncarnationID
	if err := inc.UnmarshalText([]byte(strings.Repeat("0a", 16))); err != nil || inc != nokv.IncarnationID(fill16(0x0a)) {
		t.Fatalf("UnmarshalText = %v, %v", inc, err)
	}
	if txt, _ := inc.MarshalText(); string(txt) != strings.Repeat("0a", 16) {
		t.Fatalf("MarshalText = %q", txt)
	}
	if !(nokv.OperationID{}).IsZero() || tOp.IsZero() {
		t.Error("IsZero")
	}
}

func TestSnapshotID(t *testing.T) {
	for _, c := range []struct {
		s  string
		v  nokv.SnapshotID
		ok bool
	}{
		{"0", 0, true}, {"1", 1, true}, {"18446744073709551615", math.MaxUint64, true},
		{"18446744073709551616", 0, false}, {"01", 0, false}, {"-1", 0, false}, {"+1", 0, false},
		{"", 0, false}, {"1 ", 0, false}, {"1e3", 0, false},
	} {
		v, err := nokv.ParseSnapshotID(c.s)
		if c.ok != (err == nil) || v != c.v {
			t.Errorf("ParseSnapshotID(%q) = %d, %v", c.s, v, err)
		}
		if c.ok && v.String() != c.s {
			t.Errorf("String(%d) = %q", v, v.String())
		}
		if !c.ok && !errors.Is(err, nokv.ErrBadID) {
			t.Errorf("ParseSnapshotID(%q): %v, want ErrBadID", c.s, err)
		}
	}
	k, err := nokv.ChangeEventKey{Root: tRoot, CommitVersion: 1}.Encode()
	if err != nil || len(k) != 28 {
		t.Errorf("change event key %x, %v", k, err)
	}
}

// ---------------------------------------------------------------------------
// Index scalars

func TestIndexScalarGolden(t *testing.T) {
	cases := []struct {
		v    nokv.IndexScalar
		want string
	}{
		{nokv.NullScalar(), "01"},
		{nokv.BoolScalar(false), "02 00"},
		{nokv.BoolScalar(true), "02 01"},
		{nokv.SignedScalar(math.MinInt64), "03 0000000000000000"},
		{nokv.SignedScalar(-1), "03 7fffffffffffffff"},
		{nokv.SignedScalar(0), "03 8000000000000000"},
		{nokv.SignedScalar(1), "03 8000000000000001"},
		{nokv.SignedScalar(math.MaxInt64), "03 ffffffffffffffff"},
		{nokv.UnsignedScalar(258), "04 0000000000000102"},
		{nokv.FloatScalar(1.5), "05 bff8000000000000"},
		{nokv.FloatScalar(-1.5), "05 4007ffffffffffff"},
		{nokv.FloatScalar(0), "05 8000000000000000"},
		{nokv.FloatScalar(math.Copysign(0, -1)), "05 8000000000000000"},
		{nokv.TimestampScalar(time.Unix(1, 5)), "06 8000000000000001 00000005"},
		{nokv.TimestampScalar(time.Unix(-1, 0)), "06 7fffffffffffffff 00000000"},
		{nokv.BytesScalar(nil), "07 0000"},
		{nokv.BytesScalar([]byte{0, 1, 0xff}), "07 00ff 01 ff 0000"},
		{nokv.StringScalar("ab"), "08 6162 0000"},
		{nokv.StringScalar("\x00"), "08 00ff 0000"},
	}
	for _, c := range cases {
		got, err := nokv.EncodeIndexScalar(c.v)
		if err != nil {
			t.Fatalf("%v: %v", c.v, err)
		}
		want := hx(t, c.want)
		if !bytes.Equal(got, want) {
			t.Errorf("%v:\n got %x\nwant %x", c.v, got, want)
		}
		dec, n, err := nokv.DecodeIndexScalar(append(bytes.Clone(want), 0xee))
		if err != nil || n != len(want) {
			t.Errorf("decode %x = %v, %d, %v", want, dec, n, err)
			continue
		}
		if nokv.CompareIndexScalars(dec, c.v) != 0 || dec.Kind != c.v.Kind {
			t.Errorf("decode %x = %#v, want %#v", want, dec, c.v)
		}
		if !reflect.DeepEqual(dec, c.v) {
			t.Errorf("decode %x = %#v, not identical to %#v", want, dec, c.v)
		}
	}
}

func TestIndexScalarDecodeRejects(t *testing.T) {
	bad := []struct {
		hex  string
		enum bool
	}{
		{"", false},
		{"00", true},
		{"09", true},
		{"ff", true},
		{"02", false},
		{"02 02", false},
		{"03 00", false},
		{"05 7fffffffffffffff", false}, // -0
		{"05 fff0000000000000", false}, // +Inf
		{"05 000fffffffffffff", false}, // -Inf
		{"05 fff8000000000000", false}, // NaN
		{"05 0007ffffffffffff", false}, // -NaN
		{"06 8000000000000000 3b9aca00", false},
		{"06 8000000000000000 0000", false},
		{"07", false},
		{"07 00", false},
		{"07 61 00", false},
		{"07 00 01", false},
		{"07 00 fe 0000", false},
		{"08 ff 0000", false}, // not UTF-8
	}
	for _, c := range bad {
		_, _, err := nokv.DecodeIndexScalar(hx(t, c.hex))
		if !errors.Is(err, nokv.ErrBadRecord) || c.enum != errors.Is(err, nokv.ErrUnknownEnum) {
			t.Errorf("decode %q: %v (want ErrBadRecord, ErrUnknownEnum %t)", c.hex, err, c.enum)
		}
	}
	for _, v := range []nokv.IndexScalar{
		{}, {Kind: 9}, nokv.FloatScalar(math.Inf(1)), nokv.FloatScalar(math.NaN()),
		nokv.StringScalar("\xff"), nokv.BytesScalar(make([]byte, nokv.MaxIndexScalarBytes+1)),
		nokv.StringScalar(strings.Repeat("a", nokv.MaxIndexScalarBytes+1)),
	} {
		if _, err := nokv.EncodeIndexScalar(v); !errors.Is(err, nokv.ErrBadRecord) {
			t.Errorf("encode %v: %v", v.Kind, err)
		}
	}
	// The largest allowed scalar round-trips; one escaped byte more does not decode.
	big := nokv.BytesScalar(bytes.Repeat([]byte{0}, nokv.MaxIndexScalarBytes))
	enc, err := nokv.EncodeIndexScalar(big)
	if err != nil {
		t.Fatal(err)
	}
	if _, n, err := nokv.DecodeIndexScalar(enc); err != nil || n != len(enc) {
		t.Fatalf("largest scalar: %d, %v", n, err)
	}
	over := append(append([]byte{0x07}, bytes.Repeat([]byte{0, 0xff}, nokv.MaxIndexScalarBytes+1)...), 0, 0)
	if _, _, err := nokv.DecodeIndexScalar(over); !errors.Is(err, nokv.ErrBadRecord) {
		t.Fatalf("oversized scalar: %v", err)
	}
}

var kinds = []nokv.IndexScalarKind{
	nokv.IndexScalarNull, nokv.IndexScalarBool, nokv.IndexScalarSigned, nokv.IndexScalarUnsigned,
	nokv.IndexScalarFloat, nokv.IndexScalarTimestamp, nokv.IndexScalarBytes, nokv.IndexScalarString,
}

// randScalar returns a random valid scalar of kind k, biased to edges:
// extreme integers, signed zeros and subnormals, negative times, NUL and
// 0xff bytes, prefixes of one another.
func randScalar(r *rand.Rand, k nokv.IndexScalarKind) nokv.IndexScalar {
	pick := func(n int) int { return r.IntN(n) }
	switch k {
	case nokv.IndexScalarNull:
		return nokv.NullScalar()
	case nokv.IndexScalarBool:
		return nokv.BoolScalar(pick(2) == 1)
	case nokv.IndexScalarSigned:
		edges := []int64{math.MinInt64, math.MinInt64 + 1, -256, -1, 0, 1, 255, math.MaxInt64 - 1, math.MaxInt64}
		if pick(3) == 0 {
			return nokv.SignedScalar(edges[pick(len(edges))])
		}
		return nokv.SignedScalar(int64(r.Uint64()) >> pick(64))
	case nokv.IndexScalarUnsigned:
		edges := []uint64{0, 1, 255, 256, math.MaxUint32, math.MaxUint64 - 1, math.MaxUint64}
		if pick(3) == 0 {
			return nokv.UnsignedScalar(edges[pick(len(edges))])
		}
		return nokv.UnsignedScalar(r.Uint64() >> pick(64))
	case nokv.IndexScalarFloat:
		edges := []float64{0, math.Copysign(0, -1), math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
			math.MaxFloat64, -math.MaxFloat64, 1, -1, 0.1, -0.1, 1e300, -1e-300}
		if pick(3) == 0 {
			return nokv.FloatScalar(edges[pick(len(edges))])
		}
		for {
			f := math.Float64frombits(r.Uint64())
			if !math.IsNaN(f) && !math.IsInf(f, 0) {
				return nokv.FloatScalar(f)
			}
		}
	case nokv.IndexScalarTimestamp:
		sec := int64(r.Uint64()) >> pick(64)
		if pick(4) == 0 {
			sec = int64(pick(5)) - 2
		}
		return nokv.TimestampScalar(time.Unix(sec, int64(pick(3))*int64(r.IntN(1e9))/2))
	case nokv.IndexScalarBytes:
		alphabet := []byte{0x00, 0x01, 0x61, 0xfe, 0xff}
		b := make([]byte, pick(6))
		for i := range b {
			b[i] = alphabet[pick(len(alphabet))]
		}
		return nokv.BytesScalar(b)
	case nokv.IndexScalarString:
		alphabet := []string{"\x00", "\x01", "a", "b", "é", "\u00ff", "\U0001F600", "/"}
		var sb strings.Builder
		for range pick(6) {
			sb.WriteString(alphabet[pick(len(alphabet))])
		}
		return nokv.StringScalar(sb.String())
	}
	panic("unknown kind")
}

func mustEncode(t testing.TB, v nokv.IndexScalar) []byte {
	t.Helper()
	b, err := nokv.EncodeIndexScalar(v)
	if err != nil {
		t.Fatalf("encode %#v: %v", v, err)
	}
	return b
}

// TestIndexScalarOrderSameKind: for random pairs of one kind,
// CompareIndexScalars(a, b) == bytes.Compare(enc(a), enc(b)), and decoding
// gives back a value that compares equal.
func TestIndexScalarOrderSameKind(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, k := range kinds {
		for range 20000 {
			a, b := randScalar(r, k), randScalar(r, k)
			ea, eb := mustEncode(t, a), mustEncode(t, b)
			if got, want := bytes.Compare(ea, eb), nokv.CompareIndexScalars(a, b); got != want {
				t.Fatalf("%v: a=%#v b=%#v: bytes order %d, value order %d (%x, %x)", k, a, b, got, want, ea, eb)
			}
			if bytes.HasPrefix(eb, ea) && !bytes.Equal(ea, eb) {
				t.Fatalf("%v: encoding %x is a prefix of %x", k, ea, eb)
			}
			d, n, err := nokv.DecodeIndexScalar(ea)
			if err != nil || n != len(ea) || nokv.CompareIndexScalars(d, a) != 0 {
				t.Fatalf("%v: decode %x = %#v, %d, %v", k, ea, d, n, err)
			}
		}
	}
}

// TestIndexScalarOrderAcrossKinds: scalars of different kinds order by the
// documented kind order, Null < Bool < Signed < Unsigned < Float <
// Timestamp < Bytes < String, whatever their values.
func TestIndexScalarOrderAcrossKinds(t *testing.T) {
	want := []string{"Null", "Bool", "Signed", "Unsigned", "Float", "Timestamp", "Bytes", "String"}
	for i, k := range kinds {
		if k.String() != want[i] || uint8(k) != uint8(i+1) {
			t.Fatalf("kind %d is %v (%d), want %s", i, k, k, want[i])
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		ka, kb := kinds[r.IntN(len(kinds))], kinds[r.IntN(len(kinds))]
		if ka == kb {
			continue
		}
		a, b := randScalar(r, ka), randScalar(r, kb)
		got := bytes.Compare(mustEncode(t, a), mustEncode(t, b))
		if wantOrder := nokv.CompareIndexScalars(a, b); got != wantOrder || (ka < kb) != (got < 0) {
			t.Fatalf("%v vs %v: bytes order %d, value order %d", ka, kb, got, wantOrder)
		}
	}
}

// TestSecondaryIndexKeyOrder: because the value codec is order-preserving
// and self-delimiting, one index's keys sort by (value, incarnation, path)
// exactly as their bytes do.
func TestSecondaryIndexKeyOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	type row struct {
		k   nokv.SecondaryIndexKey
		enc []byte
	}
	incs := []nokv.IncarnationID{fill16(0x00), fill16(0x01), fill16(0xff)}
	paths := [][]string{{"a"}, {"a", "b"}, {"ab"}, {"a\x01"}, {"b"}, {"a", "b", "c"}}
	var rows []row
	for range 3000 {
		k := nokv.SecondaryIndexKey{
			Root: tRoot, IndexID: "f",
			Value:       randScalar(r, kinds[r.IntN(len(kinds))]),
			Incarnation: incs[r.IntN(len(incs))],
			Path:        paths[r.IntN(len(paths))],
		}
		b, err := k.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nokv.Families().ShardOf(nokv.FamilySecondaryIndex, b); err != nil {
			t.Fatalf("ShardOf: %v", err)
		}
		back, err := nokv.ParseSecondaryIndexKey(b)
		if err != nil || nokv.CompareIndexScalars(back.Value, k.Value) != 0 || back.Incarnation != k.Incarnation || !slices.Equal(back.Path, k.Path) {
			t.Fatalf("parse %x = %#v, %v", b, back, err)
		}
		rows = append(rows, row{k, b})
	}
	byTuple := func(a, b row) int {
		if c := nokv.CompareIndexScalars(a.k.Value, b.k.Value); c != 0 {
			return c
		}
		if c := bytes.Compare(a.k.Incarnation[:], b.k.Incarnation[:]); c != 0 {
			return c
		}
		return workbench.ComparePaths(a.k.Path, b.k.Path)
	}
	for i := 1; i < len(rows); i++ {
		a, b := rows[i-1], rows[i]
		if got, want := bytes.Compare(a.enc, b.enc), byTuple(a, b); got != want {
			t.Fatalf("keys %x and %x: bytes order %d, tuple order %d", a.enc, b.enc, got, want)
		}
	}
}

func TestIndexProjectionHelpers(t *testing.T) {
	p := nokv.SortedIndexProjection([]nokv.IndexField{
		{ID: "b", Value: nokv.UnsignedScalar(2)},
		{ID: "a", Value: nokv.UnsignedScalar(1)},
	})
	if p[0].ID != "a" || p[1].ID != "b" {
		t.Fatalf("sorted = %v", p)
	}
	if v, ok := p.Lookup("b"); !ok || v.Unsigned != 2 {
		t.Fatalf("Lookup(b) = %v, %t", v, ok)
	}
	if _, ok := p.Lookup("c"); ok {
		t.Fatal("Lookup(c) found a field")
	}
}
