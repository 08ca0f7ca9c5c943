package workbench_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/workbench"
)

// TestOneWalkerFindsInconsistencies: a root whose reference to a sound
// object disagrees with that object (a table's record count, a delta
// segment's record count or sequence) is reported by head.Check, by pin
// verify and by fsck alike, in the same words: all three are one
// verifying walk (walk.Walk). The honest root beside it passes all
// three.
func TestOneWalkerFindsInconsistencies(t *testing.T) {
	cases := []struct {
		name string
		// lie edits the root and returns the key of the object whose
		// reference it falsified.
		lie func(t *testing.T, r *roots.Root, s *workbench.Service) string
	}{
		{"table record count", func(t *testing.T, r *roots.Root, s *workbench.Service) string {
			r.Families[0].Records++
			return s.Store().Layout().Table(r.Families[0].Table.Hash)
		}},
		{"delta record count", func(t *testing.T, r *roots.Root, s *workbench.Service) string {
			r.Deltas[0].Ref.Count++
			return s.Store().Layout().Delta(r.Deltas[0].Ref.Hash)
		}},
		{"delta sequence", func(t *testing.T, r *roots.Root, s *workbench.Service) string {
			// The oldest delta, one sequence earlier: still descending.
			d := &r.Deltas[len(r.Deltas)-1]
			if d.Sequence < 2 {
				t.Fatalf("the oldest delta is at sequence %d", d.Sequence)
			}
			d.Sequence--
			return s.Store().Layout().Delta(d.Ref.Hash)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			b := mem.NewBucket()
			// A fold, then two commits whose deltas the root lists (no
			// fold before eight).
			s := newServiceOn(t, b, workbench.Options{BlockSize: 64, InlineMax: 16, Engine: head.Options{MaxDeltas: 8, InlineBytes: -1}})
			mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "a.txt", `"text":"`+strings.Repeat("alpha ", 30)+`"`))
			if err := s.Store().Fold(ctx); err != nil {
				t.Fatal(err)
			}
			mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "b.txt", `"text":"beta"`))
			mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "c.txt", `"text":"`+strings.Repeat("gamma ", 30)+`"`))
			layout := s.Store().Layout()
			sn, err := s.Store().Pin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(sn.Root().Deltas) < 2 || len(sn.Root().Families) == 0 {
				t.Fatalf("the root lists %d deltas and %d families", len(sn.Root().Deltas), len(sn.Root().Families))
			}
			lying := *sn.Root()
			lying.Families = append([]roots.FamilyRef(nil), lying.Families...)
			lying.Deltas = append([]roots.DeltaRef(nil), lying.Deltas...)
			victim := c.lie(t, &lying, s)
			body, ref, err := lying.Encode(layout.Schema())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Put(ctx, layout.Root(ref.Hash), body, bucket.IfAbsent()); err != nil {
				t.Fatal(err)
			}
			putPin(t, b, s, "honest", sn.RootHash())
			putPin(t, b, s, "lying", ref.Hash)

			// head.Check.
			if err := head.Check(ctx, b, layout, sn.RootHash(), head.CheckOptions{Strict: true}); err != nil {
				t.Fatalf("Check of the honest root: %v", err)
			}
			checkErr := head.Check(ctx, b, layout, ref.Hash, head.CheckOptions{Strict: true})
			if !errors.Is(checkErr, head.ErrInconsistent) || !strings.Contains(checkErr.Error(), "root says") {
				t.Fatalf("Check of the lying root: %v", checkErr)
			}
			found := checkErr.Error()

			// Pin verify, as cairn pin verify runs it.
			verify := func(name string) gcsweep.VerifyReport {
				t.Helper()
				p, err := gcsweep.ReadPin(ctx, b, layout, name)
				if err != nil {
					t.Fatal(err)
				}
				refs, err := workbench.PinBlockRefs(ctx, s.Store(), p.RootHash)
				if err != nil {
					t.Fatal(err)
				}
				rep, err := gcsweep.VerifyPin(ctx, b, layout, p, refs, gcsweep.VerifyOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return rep
			}
			if rep := verify("honest"); len(rep.Problems) != 0 {
				t.Fatalf("pin verify of the honest pin: %v", rep.Problems)
			}
			rep := verify("lying")
			if len(rep.Problems) != 1 {
				t.Fatalf("pin verify of the lying pin: %v, want one problem", rep.Problems)
			}
			p := rep.Problems[0]
			if p.Object.Key != victim || p.Missing || !errors.Is(p.Err, head.ErrInconsistent) || p.Err.Error() != found {
				t.Fatalf("pin verify found %s: %v; Check found %s", p.Object.Key, p.Err, found)
			}
			if !strings.HasPrefix(p.String(), "inconsistent ") {
				t.Fatalf("problem reads %q", p)
			}

			// fsck.
			frep := runFsck(t, b)
			var engine []workbench.FsckFinding
			for _, f := range frep.Findings {
				if f.Layer == "engine" {
					engine = append(engine, f)
				}
			}
			if len(engine) != 1 || engine[0].Root != ref.Hash.String() || engine[0].Found != found {
				t.Fatalf("fsck's engine findings %v; Check found %s at root %s", engine, found, shortRoot(ref.Hash))
			}
		})
	}
}

func shortRoot(h digest.Hash) string { return h.String()[:12] }
