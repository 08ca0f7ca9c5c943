package workbench

import (
	"context"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
)

// Seeding of read-side test data straight through the engine: a
// workbench marker and published artifacts written as the records the
// write tools produce (WorkspaceCurrent, PathCurrent, ArtifactRevision,
// ArtifactManifest rows and block objects), so that stat, list and read
// can be tested on shapes that other clients may store but the Workbench
// write tools cannot: an artifact outside the five sections, at a
// section's own name, or at a name that also has artifacts below it.

// SeedWorkbenchForTest makes workbench id exist (Visible) with a fresh
// incarnation, unless it exists already.
func SeedWorkbenchForTest(tb testing.TB, s *Service, id string) {
	tb.Helper()
	key, err := WorkspaceCurrentKey{Root: s.root, WorkbenchID: id}.Encode()
	if err != nil {
		tb.Fatal(err)
	}
	inc := NewIncarnationID()
	claimKey, err := WorkspaceIncarnationClaimKey{Root: s.root, Incarnation: inc}.Encode()
	if err != nil {
		tb.Fatal(err)
	}
	_, err = s.store.Do(context.Background(), head.Command{
		Namespace: s.root,
		RequestID: s.requestID(),
		Digest:    head.Digest([]byte("seed workbench"), []byte(id)),
		Apply: func(tx *head.Tx) ([]byte, error) {
			if _, ok, err := tx.Get(shards.WorkspaceCurrent, key); err != nil || ok {
				return nil, err
			}
			ws, err := WorkspaceCurrent{
				Incarnation:       inc,
				WorkspaceRevision: 1,
				State:             WorkspaceStateVisible,
				CreatedVersion:    tx.Sequence(),
				ModifiedVersion:   tx.Sequence(),
			}.Encode()
			if err != nil {
				return nil, err
			}
			claim, err := WorkspaceIncarnationClaim{WorkbenchID: id}.Encode()
			if err != nil {
				return nil, err
			}
			if err := tx.Put(shards.WorkspaceCurrent, key, ws); err != nil {
				return nil, err
			}
			return nil, tx.Put(shards.WorkspaceIncarnationClaim, claimKey, claim)
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// SeedFile is one artifact for SeedFilesForTest.
type SeedFile struct {
	Path        string // stored path, e.g. "outputs/a.txt"
	ContentType string
	Body        []byte
}

// SeedFilesForTest publishes files in one commit, as the write tools
// would one by one: for each, blocks of the service's block size, a new
// revision and its manifest rows, and the path entry at the next
// generation; the workspace revision advances once per file. It returns
// the generations.
func SeedFilesForTest(tb testing.TB, s *Service, id string, files ...SeedFile) []uint64 {
	tb.Helper()
	ctx := context.Background()
	SeedWorkbenchForTest(tb, s, id)
	type prepared struct {
		comps    []string
		rev      RevisionID
		rows     []ArtifactManifestEntry
		manifest string
		SeedFile
	}
	var preps []prepared
	digest := [][]byte{[]byte("seed files"), []byte(id)}
	for _, f := range files {
		comps, werr := NormalizePath(f.Path)
		if werr != nil {
			tb.Fatal(werr)
		}
		p := prepared{comps: comps, rev: NewRevisionID(), SeedFile: f}
		bs := s.opts.BlockSize
		var manifestBytes []byte
		for i := 0; i*bs < len(f.Body); i++ {
			part := f.Body[i*bs : min(len(f.Body), (i+1)*bs)]
			k := s.layout.Block(s.root, p.rev, uint64(i))
			if _, err := s.b.Put(ctx, k, part, bucket.Unconditional); err != nil {
				tb.Fatal(err)
			}
			r := ArtifactManifestEntry{
				PhysicalOwner: p.rev, PhysicalObjectIndex: uint64(i), ObjectKey: k,
				LogicalOffset: uint64(i * bs), Length: uint64(len(part)), DigestURI: DigestURI(part),
			}
			b, err := r.Encode()
			if err != nil {
				tb.Fatal(err)
			}
			manifestBytes = append(manifestBytes, b...)
			p.rows = append(p.rows, r)
		}
		p.manifest = DigestURI(manifestBytes)
		preps = append(preps, p)
		digest = append(digest, p.rev[:])
	}
	wsKey, err := WorkspaceCurrentKey{Root: s.root, WorkbenchID: id}.Encode()
	if err != nil {
		tb.Fatal(err)
	}
	gens := make([]uint64, len(preps))
	_, err = s.store.Do(ctx, head.Command{
		Namespace: s.root,
		RequestID: s.requestID(),
		Digest:    head.Digest(digest...),
		Apply: func(tx *head.Tx) ([]byte, error) {
			raw, ok, err := tx.Get(shards.WorkspaceCurrent, wsKey)
			if err != nil || !ok {
				return nil, err
			}
			ws, err := DecodeWorkspaceCurrent(raw)
			if err != nil {
				return nil, err
			}
			for i, p := range preps {
				pk, err := PathCurrentKey{Root: s.root, Incarnation: ws.Incarnation, Path: p.comps}.Encode()
				if err != nil {
					return nil, err
				}
				gen := uint64(1)
				if old, ok, err := tx.Get(shards.PathCurrent, pk); err != nil {
					return nil, err
				} else if ok {
					e, err := DecodePathEntry(old)
					if err != nil {
						return nil, err
					}
					gen = e.Generation + 1
				}
				gens[i] = gen
				size := uint64(len(p.Body))
				revVal, err := ArtifactRevision{
					LogicalSize: size, BodyDigestURI: DigestURI(p.Body),
					ManifestDigestURI: p.manifest, BlockCount: uint64(len(p.rows)),
					ContentType: p.ContentType, State: RevisionStateAvailable, ReferenceEpoch: 1,
					StrongReferenceCount: 1, CreatedVersion: tx.Sequence(),
				}.Encode()
				if err != nil {
					return nil, err
				}
				revKey, err := ArtifactRevisionKey{Root: s.root, Revision: p.rev}.Encode()
				if err != nil {
					return nil, err
				}
				if err := tx.Put(shards.ArtifactRevision, revKey, revVal); err != nil {
					return nil, err
				}
				for j, r := range p.rows {
					k, err := ArtifactManifestKey{Root: s.root, Revision: p.rev, ObjectIndex: uint64(j)}.Encode()
					if err != nil {
						return nil, err
					}
					v, err := r.Encode()
					if err != nil {
						return nil, err
					}
					if err := tx.Put(shards.ArtifactManifest, k, v); err != nil {
						return nil, err
					}
				}
				entry, err := PathEntry{
					Generation: gen, Revision: p.rev, LogicalSize: size,
					BodyDigestURI: DigestURI(p.Body), ManifestDigestURI: p.manifest,
					ContentType: p.ContentType, CreatedVersion: tx.Sequence(), ModifiedVersion: tx.Sequence(),
				}.Encode()
				if err != nil {
					return nil, err
				}
				if err := tx.Put(shards.PathCurrent, pk, entry); err != nil {
					return nil, err
				}
				ws.WorkspaceRevision++
			}
			ws.ModifiedVersion = tx.Sequence()
			wsVal, err := ws.Encode()
			if err != nil {
				return nil, err
			}
			return nil, tx.Put(shards.WorkspaceCurrent, wsKey, wsVal)
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return gens
}
