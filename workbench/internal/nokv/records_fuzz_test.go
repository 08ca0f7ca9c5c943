package nokv_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// fuzzTarget is one decoder under FuzzDecodeRecords: decode, then encode
// what it decoded. family is set for keys, which must also satisfy
// nokv.Families().ShardOf.
type fuzzTarget struct {
	name   string
	family shards.Family
	round  func([]byte) ([]byte, error)
}

func roundTrip[T interface{ Encode() ([]byte, error) }](dec func([]byte) (T, error)) func([]byte) ([]byte, error) {
	return func(b []byte) ([]byte, error) {
		v, err := dec(b)
		if err != nil {
			return nil, err
		}
		out, err := v.Encode()
		if err != nil {
			return nil, errors.Join(errEncode, err)
		}
		return out, nil
	}
}

var errEncode = errors.New("encode of a decoded value failed")

// fuzzTargets is indexed by the first byte of the fuzz input.
var fuzzTargets = []fuzzTarget{
	{"WorkspaceCurrent", 0, roundTrip(nokv.DecodeWorkspaceCurrent)},
	{"WorkspaceIncarnationClaim", 0, roundTrip(nokv.DecodeWorkspaceIncarnationClaim)},
	{"PathEntry", 0, roundTrip(nokv.DecodePathEntry)},
	{"ArtifactRevision", 0, roundTrip(nokv.DecodeArtifactRevision)},
	{"ArtifactManifestEntry", 0, roundTrip(nokv.DecodeArtifactManifestEntry)},
	{"RevisionRef", 0, roundTrip(nokv.DecodeRevisionRef)},
	{"GcCandidate", 0, roundTrip(nokv.DecodeGcCandidate)},
	{"ChangeEvent", 0, roundTrip(nokv.DecodeChangeEvent)},
	{"PublishOperation", 0, roundTrip(nokv.DecodePublishOperation)},
	{"StagedObject", 0, roundTrip(nokv.DecodeStagedObject)},
	{"SecondaryIndexEntry", 0, roundTrip(nokv.DecodeSecondaryIndexEntry)},
	{"WorkspaceCurrentKey", nokv.FamilyWorkspaceCurrent, roundTrip(nokv.ParseWorkspaceCurrentKey)},
	{"WorkspaceIncarnationClaimKey", nokv.FamilyWorkspaceIncarnationClaim, roundTrip(nokv.ParseWorkspaceIncarnationClaimKey)},
	{"PathCurrentKey", nokv.FamilyPathCurrent, roundTrip(nokv.ParsePathCurrentKey)},
	{"ArtifactRevisionKey", nokv.FamilyArtifactRevision, roundTrip(nokv.ParseArtifactRevisionKey)},
	{"ArtifactManifestKey", nokv.FamilyArtifactManifest, roundTrip(nokv.ParseArtifactManifestKey)},
	{"RevisionRefKey", nokv.FamilyRevisionRef, roundTrip(nokv.ParseRevisionRefKey)},
	{"GcCandidateKey", nokv.FamilyGcCandidate, roundTrip(nokv.ParseGcCandidateKey)},
	{"ChangeEventKey", nokv.FamilyChangeEvent, roundTrip(nokv.ParseChangeEventKey)},
	{"OperationKey", nokv.FamilyOperation, roundTrip(nokv.ParseOperationKey)},
	{"StagedObjectKey", nokv.FamilyStagedObject, roundTrip(nokv.ParseStagedObjectKey)},
	{"SecondaryIndexKey", nokv.FamilySecondaryIndex, roundTrip(nokv.ParseSecondaryIndexKey)},
	{"IndexScalar", 0, func(b []byte) ([]byte, error) {
		v, n, err := nokv.DecodeIndexScalar(b)
		if err != nil {
			return nil, err
		}
		if n != len(b) {
			// A scalar reads only its own bytes: what follows is not its.
			return nil, errTrailing
		}
		out, err := nokv.EncodeIndexScalar(v)
		if err != nil {
			return nil, errors.Join(errEncode, err)
		}
		return out, nil
	}},
	{"PathDirectory", 0, roundTrip(nokv.DecodePathDirectory)},
	{"PathDirectoryKey", nokv.FamilyPathDirectory, roundTrip(nokv.ParsePathDirectoryKey)},
}

var errTrailing = errors.New("bytes after the scalar")

// seedCorpus returns every fixture of the unit tests, each prefixed with
// its target's selector.
func seedCorpus(t testing.TB) [][]byte {
	sel := map[string]byte{}
	for i, ft := range fuzzTargets {
		sel[ft.name] = byte(i)
	}
	var out [][]byte
	for _, r := range variants() {
		b, err := r.encode(r.value)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append([]byte{sel[r.name]}, b...))
	}
	for _, c := range keyCases() {
		b, err := c.key.Encode()
		if err != nil {
			t.Fatal(err)
		}
		var name string
		for _, ft := range fuzzTargets {
			if ft.family == c.key.Family() && ft.family != 0 {
				name = ft.name
			}
		}
		out = append(out, append([]byte{sel[name]}, b...))
	}
	for _, k := range kinds {
		b, err := nokv.EncodeIndexScalar(randScalarFixed(k))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append([]byte{sel["IndexScalar"]}, b...))
	}
	return out
}

func checkFuzzInput(t *testing.T, data []byte) {
	if len(data) == 0 {
		return
	}
	ft := fuzzTargets[int(data[0])%len(fuzzTargets)]
	in := data[1:]
	out, err := ft.round(in)
	if err != nil {
		if errors.Is(err, errEncode) {
			t.Fatalf("%s: decoded %x but could not encode it: %v", ft.name, in, err)
		}
		if !errors.Is(err, nokv.ErrBadRecord) && !errors.Is(err, errTrailing) {
			t.Fatalf("%s: decode %x: error %v does not wrap ErrBadRecord", ft.name, in, err)
		}
		return
	}
	if !bytes.Equal(out, in) {
		t.Fatalf("%s: decode then encode changed\n%x\ninto\n%x", ft.name, in, out)
	}
	if ft.family != 0 {
		if _, err := nokv.Families().ShardOf(ft.family, in); err != nil {
			t.Fatalf("%s: accepted key %x fails ShardOf: %v", ft.name, in, err)
		}
	}
}

// FuzzDecodeRecords feeds arbitrary bytes to every record decoder and key
// parser, selected by the first byte. No input may panic; an error must
// wrap ErrBadRecord; an accepted input must encode back to exactly itself,
// and an accepted key must satisfy nokv.Families().ShardOf.
func FuzzDecodeRecords(f *testing.F) {
	for _, b := range seedCorpus(f) {
		f.Add(b)
	}
	f.Fuzz(checkFuzzInput)
}

// FuzzIndexScalarOrder decodes two scalars from arbitrary bytes; when both
// decode, their value order must equal the byte order of their encodings.
func FuzzIndexScalarOrder(f *testing.F) {
	for _, a := range kinds {
		for _, b := range kinds {
			ea, _ := nokv.EncodeIndexScalar(randScalarFixed(a))
			eb, _ := nokv.EncodeIndexScalar(randScalarFixed(b))
			f.Add(ea, eb)
		}
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		va, na, errA := nokv.DecodeIndexScalar(a)
		vb, nb, errB := nokv.DecodeIndexScalar(b)
		if errA != nil || errB != nil {
			return
		}
		ea, eb := a[:na], b[:nb]
		if got, want := bytes.Compare(ea, eb), nokv.CompareIndexScalars(va, vb); got != want {
			t.Fatalf("%x vs %x: bytes order %d, value order %d", ea, eb, got, want)
		}
	})
}

// TestFuzzSeedCorpus runs the fuzz checks over the seed corpus and some
// mutations of it in ordinary test runs.
func TestFuzzSeedCorpus(t *testing.T) {
	corpus := seedCorpus(t)
	if len(corpus) < len(fuzzTargets) {
		t.Fatalf("seed corpus has %d inputs for %d targets", len(corpus), len(fuzzTargets))
	}
	covered := map[byte]bool{}
	for _, b := range corpus {
		covered[b[0]] = true
		ft := fuzzTargets[b[0]]
		if out, err := ft.round(b[1:]); err != nil || !bytes.Equal(out, b[1:]) {
			t.Fatalf("%s: seed %x does not round-trip: %v", ft.name, b[1:], err)
		}
		for i := 1; i < len(b); i++ {
			for _, x := range []byte{0x00, 0x01, 0x02, 0x7f, 0xff} {
				m := bytes.Clone(b)
				m[i] = x
				checkFuzzInput(t, m)
			}
			checkFuzzInput(t, b[:i])
		}
	}
	for i, ft := range fuzzTargets {
		if !covered[byte(i)] {
			t.Errorf("no seed for %s", ft.name)
		}
	}
}

// randScalarFixed returns a fixed, non-trivial scalar of kind k.
func randScalarFixed(k nokv.IndexScalarKind) nokv.IndexScalar {
	switch k {
	case nokv.IndexScalarNull:
		return nokv.NullScalar()
	case nokv.IndexScalarBool:
		return nokv.BoolScalar(true)
	case nokv.IndexScalarSigned:
		return nokv.SignedScalar(-42)
	case nokv.IndexScalarUnsigned:
		return nokv.UnsignedScalar(42)
	case nokv.IndexScalarFloat:
		return nokv.FloatScalar(-0.25)
	case nokv.IndexScalarTimestamp:
		return nokv.TimestampScalar(fixedTime)
	case nokv.IndexScalarBytes:
		return nokv.BytesScalar([]byte{0, 'a', 0})
	default:
		return nokv.StringScalar("a\x00é")
	}
}

var fixedTime = time.Unix(1700000000, 250)
