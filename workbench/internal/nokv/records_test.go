package nokv_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
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
		newRecord("PathDirectory", nokv.PathDirectory{CreatedVersion: 7}, nokv.DecodePathDirectory, func(t testing.TB) []byte {
			return hx(t, "01", "0000000000000007")
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
				"02",
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
				lp(digestEF),
				"00", // no inline body
			)
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
	inl := fxManifest
	inl.ObjectKey, inl.Length, inl.Inline = "", 3, []byte("abc")
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
		with("ArtifactManifestEntry", man), with("ArtifactManifestEntry", inl), with("GcCandidate", gc),
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
		"WorkspaceIncarnationClaim": 1, "ArtifactManifestEntry": 2, "RevisionRef": 1,
		"GcCandidate": 1, "PublishOperation": 1, "StagedObject": 1, "SecondaryIndexEntry": 1,
		"PathDirectory": 1,
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
			if !errors.Is(err, nokv.ErrUnknownVersion) || !errors.Is(err, nokv.ErrBadRecord) || !errors.Is(err, shards.ErrFormatVersion) {
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
		{"manifest bad digest", hx(t, "02", rep("66", 16), "0000000000000002", lp("k"), rep("00", 24), lp("sha256:00"), "00", "00"),
			func(b []byte) error { _, err := nokv.DecodeArtifactManifestEntry(b); return err }},
		{"manifest key not UTF-8", hx(t, "02", rep("66", 16), "0000000000000002", "00000001 ff", rep("00", 24), lp(digestAB), "00", "00"),
			func(b []byte) error { _, err := nokv.DecodeArtifactManifestEntry(b); return err }},
		{"manifest without key or inline body", hx(t, "02", rep("66", 16), "0000000000000002", lp(""), rep("00", 16), "0000000000000003", lp(digestAB), "00", "00"),
			func(b []byte) error { _, err := nokv.DecodeArtifactManifestEntry(b); return err }},
		{"manifest inline body and key", hx(t, "02", rep("66", 16), "0000000000000002", lp("k"), rep("00", 16), "0000000000000003", lp(digestAB), "00", "01", "00000003 616263"),
			func(b []byte) error { _, err := nokv.DecodeArtifactManifestEntry(b); return err }},
		{"manifest inline body shorter than length", hx(t, "02", rep("66", 16), "0000000000000002", lp(""), rep("00", 16), "0000000000000004", lp(digestAB), "00", "01", "00000003 616263"),
			func(b []byte) error { _, err := nokv.DecodeArtifactManifestEntry(b); return err }},
		{"manifest empty inline body", hx(t, "02", rep("66", 16), "0000000000000002", lp(""), rep("00", 16), "0000000000000000", lp(digestAB), "00", "01", "00000000"),
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
