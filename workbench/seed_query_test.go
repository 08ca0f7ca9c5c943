package workbench

import (
	"context"
	"testing"
	"time"

	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/reads"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Test hooks of the query and grep tools, exported to the black-box tests
// of this directory.

// QuerySeedFile is one artifact SeedQueryWorkbench writes.
type QuerySeedFile struct {
	// Path is the stored, section-joined path ("outputs/a.txt").
	Path        string
	Body        []byte
	ContentType string // default "text/plain; charset=utf-8"
	Producer    *string
	ManifestID  *string
	Index       []nokv.IndexField // any order
}

// SeedQueryWorkbench publishes files into workbench id through the record
// layer, in one engine command: the workbench is created Visible when
// missing, each file is created or replaced (generation + 1) with a fresh
// revision whose body is stored in blocks of the service's block size,
// and the workspace revision advances once per file. It is how the query tests attach producers, manifest ids and
// custom index fields, which no Workbench tool writes.
func SeedQueryWorkbench(t testing.TB, s *Service, id string, files ...QuerySeedFile) {
	t.Helper()
	seedQueryWorkbench(t, s, id, nokv.WorkspaceStateVisible, files)
}

// SeedQueryStagingWorkbench is SeedQueryWorkbench for a workbench whose marker is
// Staging, as an unpublished restore destination is.
func SeedQueryStagingWorkbench(t testing.TB, s *Service, id string, files ...QuerySeedFile) {
	t.Helper()
	seedQueryWorkbench(t, s, id, nokv.WorkspaceStateStaging, files)
}

// SetGrepBoundsForTest lowers grep's per-call work bounds for one test.
func SetGrepBoundsForTest(t testing.TB, files int, bytes uint64) {
	oldFiles, oldBytes := reads.GrepMaxFiles, reads.GrepMaxBytes
	reads.GrepMaxFiles, reads.GrepMaxBytes = files, bytes
	t.Cleanup(func() { reads.GrepMaxFiles, reads.GrepMaxBytes = oldFiles, oldBytes })
}

func seedQueryWorkbench(t testing.TB, s *Service, id string, state nokv.WorkspaceState, files []QuerySeedFile) []uint64 {
	t.Helper()
	ctx := context.Background()
	type prepared struct {
		path     []string
		rev      nokv.RevisionID
		file     QuerySeedFile
		rows     []nokv.ArtifactManifestEntry
		manifest string
	}
	var preps []prepared
	digest := [][]byte{[]byte("seed"), []byte(id)}
	for _, f := range files {
		path, werr := core.NormalizePath(f.Path)
		if werr != nil {
			t.Fatalf("seed %s: %v", f.Path, werr)
		}
		if f.ContentType == "" {
			f.ContentType = "text/plain; charset=utf-8"
		}
		p := prepared{path: path, rev: nokv.NewRevisionID(time.Now()), file: f}
		// Blocks of the service's block size, as the write tools store a
		// body, each with its manifest row.
		bs := s.Opts.BlockSize
		var manifestBytes []byte
		for i := 0; i*bs < len(f.Body); i++ {
			part := f.Body[i*bs : min(len(f.Body), (i+1)*bs)]
			k := bodies.BlockKey(s.Store().Layout(), s.Root(), p.rev, uint64(i))
			if _, err := s.Store().Bucket().Put(ctx, k, part, bucket.Unconditional); err != nil {
				t.Fatalf("seed block: %v", err)
			}
			r := nokv.ArtifactManifestEntry{
				PhysicalOwner: p.rev, PhysicalObjectIndex: uint64(i), ObjectKey: k,
				LogicalOffset: uint64(i * bs), Length: uint64(len(part)), DigestURI: core.DigestURI(part),
			}
			b, err := r.Encode()
			if err != nil {
				t.Fatal(err)
			}
			manifestBytes = append(manifestBytes, b...)
			p.rows = append(p.rows, r)
		}
		p.manifest = core.DigestURI(manifestBytes)
		preps = append(preps, p)
		digest = append(digest, p.rev[:])
	}
	inc := nokv.NewIncarnationID()
	digest = append(digest, inc[:])
	gens := make([]uint64, len(preps))
	_, err := s.Store().Do(ctx, head.Command{
		Namespace: s.Root(),
		RequestID: s.RequestID(),
		Digest:    head.Digest(digest...),
		Apply: func(tx *head.Tx) ([]byte, error) {
			wsKey, err := nokv.WorkspaceCurrentKey{Root: s.Root(), WorkbenchID: id}.Encode()
			if err != nil {
				return nil, err
			}
			var ws nokv.WorkspaceCurrent
			b, ok, err := tx.Get(nokv.FamilyWorkspaceCurrent, wsKey)
			if err != nil {
				return nil, err
			}
			if ok {
				if ws, err = nokv.DecodeWorkspaceCurrent(b); err != nil {
					return nil, err
				}
			} else {
				ws = nokv.WorkspaceCurrent{Incarnation: inc, WorkspaceRevision: 1, State: state, CreatedVersion: tx.Sequence()}
				claimKey, err := nokv.WorkspaceIncarnationClaimKey{Root: s.Root(), Incarnation: inc}.Encode()
				if err != nil {
					return nil, err
				}
				claim, err := nokv.WorkspaceIncarnationClaim{WorkbenchID: id}.Encode()
				if err != nil {
					return nil, err
				}
				if err := tx.Put(nokv.FamilyWorkspaceIncarnationClaim, claimKey, claim); err != nil {
					return nil, err
				}
			}
			ws.ModifiedVersion = tx.Sequence()
			for i, p := range preps {
				pathKey, err := nokv.PathCurrentKey{Root: s.Root(), Incarnation: ws.Incarnation, Path: p.path}.Encode()
				if err != nil {
					return nil, err
				}
				gen := uint64(1)
				created := tx.Sequence()
				var prev *nokv.PathEntry
				if old, ok, err := tx.Get(nokv.FamilyPathCurrent, pathKey); err != nil {
					return nil, err
				} else if ok {
					e, err := nokv.DecodePathEntry(old)
					if err != nil {
						return nil, err
					}
					gen = e.Generation + 1
					created = e.CreatedVersion
					prev = &e
				}
				gens[i] = gen
				size := uint64(len(p.file.Body))
				digest := core.DigestURI(p.file.Body)
				for j, r := range p.rows {
					row, err := r.Encode()
					if err != nil {
						return nil, err
					}
					key, err := nokv.ArtifactManifestKey{Root: s.Root(), Revision: p.rev, ObjectIndex: uint64(j)}.Encode()
					if err != nil {
						return nil, err
					}
					if err := tx.Put(nokv.FamilyArtifactManifest, key, row); err != nil {
						return nil, err
					}
				}
				rev, err := nokv.ArtifactRevision{
					LogicalSize: size, BodyDigestURI: digest, ManifestDigestURI: p.manifest,
					BlockCount: uint64(len(p.rows)), ContentType: p.file.ContentType, State: nokv.RevisionStateAvailable,
					ReferenceEpoch: 1, StrongReferenceCount: 1, CreatedVersion: tx.Sequence(),
				}.Encode()
				if err != nil {
					return nil, err
				}
				revKey, err := nokv.ArtifactRevisionKey{Root: s.Root(), Revision: p.rev}.Encode()
				if err != nil {
					return nil, err
				}
				if err := tx.Put(nokv.FamilyArtifactRevision, revKey, rev); err != nil {
					return nil, err
				}
				pe := nokv.PathEntry{
					Generation: gen, Revision: p.rev, LogicalSize: size,
					BodyDigestURI: digest, ManifestDigestURI: p.manifest,
					ContentType: p.file.ContentType, Producer: p.file.Producer, ManifestID: p.file.ManifestID,
					CreatedVersion: created, ModifiedVersion: tx.Sequence(),
					Index: nokv.SortedIndexProjection(p.file.Index),
				}
				entry, err := pe.Encode()
				if err != nil {
					return nil, err
				}
				if err := tx.Put(nokv.FamilyPathCurrent, pathKey, entry); err != nil {
					return nil, err
				}
				// As publication does: the path's index rows.
				if err := core.WritePathIndex(tx, s.Root(), ws.Incarnation, p.path, prev, &pe); err != nil {
					return nil, err
				}
				// As publication does: the new path's directories.
				if err := core.PlaceDirectories(tx, s.Root(), ws.Incarnation, p.path, tx.Sequence()); err != nil {
					return nil, err
				}
				ws.WorkspaceRevision++
			}
			v, err := ws.Encode()
			if err != nil {
				return nil, err
			}
			return nil, tx.Put(nokv.FamilyWorkspaceCurrent, wsKey, v)
		},
	})
	if err != nil {
		t.Fatalf("seed workbench %s: %v", id, err)
	}
	return gens
}

// PathShardForTest returns the index of the path_current shard that holds
// the entries directly in dir (a section-joined path; "" for the top).
func PathShardForTest(t testing.TB, s *Service, dir string) uint8 {
	t.Helper()
	var comps []string
	if dir != "" {
		var werr *core.Error
		if comps, werr = core.NormalizePath(dir); werr != nil {
			t.Fatal(werr)
		}
	}
	refs, err := core.DirShards(s.Root(), comps)
	if err != nil {
		t.Fatal(err)
	}
	return refs[0].Index
}
