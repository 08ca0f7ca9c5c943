package query

import (
	"bytes"
	"context"
	"slices"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Queries answered from SecondaryIndex rows (path_index.go says which
// fields publication indexes).
//
// # When
//
// A query whose predicates include one on an indexed field that an index
// range can answer reads that range instead of scanning its scope:
//
//   - eq on a value, and in on a list of values: one range per value
//     (a null operand matches no built-in value and reads nothing);
//   - prefix on content_type or body_digest_uri: the range of encodings
//     that begin with the prefix's;
//   - lt, lte, gt and gte on one field: one range between the tightest
//     bounds they set together (any null operand: nothing matches).
//
// When several fields qualify, eq comes first, then in, prefix and ranges;
// ties go to the first predicate. The index is not used when the scope
// holds a path with custom index fields (their types are inferred over the
// whole scope, see query.go), and ranges that hold more than
// queryIndexMaxHits rows are given up for the scan: past that many, the
// point reads of the hits cost about what the scan does. The scan is
// also the answer when no predicate qualifies.
//
// # Recheck
//
// As the seed prescribes, each hit is rechecked at the query's snapshot:
// its incarnation must be that of a Visible workbench of the scope (the
// marker read with the scope), its path inside the scope's prefix, and its
// PathCurrent row must exist with the generation and revision the index
// row names. The hits' PathCurrent shards are fetched in one parallel
// round first. The rows that pass are the query's rows, in the stable
// order; the caller applies every predicate to them, the indexed one
// included, so the result is exactly the scan's: rows that fail the
// indexed predicate are never matches, and the index holds every row
// that can pass it.

// queryIndexMaxHits bounds the hits an index range may yield before the
// query falls back to the scan.
const queryIndexMaxHits = 2048

// queryRecheckConcurrency bounds the recheck's point reads in flight.
const queryRecheckConcurrency = 32

// indexRange is one key range of an index: the keys that begin with
// prefix, come after lo (exclusive; nil: from the prefix on) and before hi
// (nil: to the prefix's end).
type indexRange struct {
	prefix, lo, hi []byte
}

// indexPlan is how a query reads an index: its ranges, and the rank of
// the predicates they answer (lower is more selective).
type indexPlan struct {
	ranges []indexRange
	rank   int
}

// planQueryIndex chooses the index ranges that answer one of preds, if
// any can. An operand of another type than the field's leaves the
// predicate to the scan, which reports it.
func planQueryIndex(root nokv.RootID, preds []queryPredicate) (indexPlan, bool, error) {
	var best indexPlan
	found := false
	take := func(p indexPlan) {
		if !found || p.rank < best.rank {
			best, found = p, true
		}
	}
	bounds := map[string]*indexRange{} // the range predicates of each field
	var boundOrder []string
	for _, p := range preds {
		id, indexed := core.PathIndexIDs[p.field]
		if !indexed {
			continue
		}
		kind := queryBuiltins[p.field]
		whole, err := nokv.SecondaryIndexPrefix(root, id)
		if err != nil {
			return indexPlan{}, false, err
		}
		kindPrefix := append(slices.Clip(whole), byte(kind))
		encode := func(v nokv.IndexScalar) ([]byte, error) {
			return nokv.SecondaryIndexValuePrefix(root, id, v)
		}
		switch p.op {
		case "eq", "in":
			values := p.values
			rank := 1
			if p.op == "eq" {
				values, rank = []nokv.IndexScalar{p.value}, 0
			}
			plan := indexPlan{rank: rank}
			seen := map[string]bool{}
			usable := true
			for _, v := range values {
				if v.Kind == nokv.IndexScalarNull {
					continue // no built-in value is null
				}
				if v.Kind != kind {
					usable = false
					break
				}
				k, err := encode(v)
				if err != nil {
					return indexPlan{}, false, err
				}
				if !seen[string(k)] {
					seen[string(k)] = true
					plan.ranges = append(plan.ranges, indexRange{prefix: k})
				}
			}
			if usable {
				slices.SortFunc(plan.ranges, func(a, b indexRange) int { return bytes.Compare(a.prefix, b.prefix) })
				take(plan)
			}
		case "prefix":
			if kind != nokv.IndexScalarString || p.value.Kind != nokv.IndexScalarString {
				continue
			}
			k, err := encode(p.value)
			if err != nil {
				return indexPlan{}, false, err
			}
			// The encoding of every string that begins with the operand
			// begins with the operand's encoding less its terminator.
			take(indexPlan{rank: 2, ranges: []indexRange{{prefix: k[:len(k)-2]}}})
		case "lt", "lte", "gt", "gte":
			r := bounds[p.field]
			if r == nil {
				r = &indexRange{prefix: kindPrefix}
				bounds[p.field] = r
				boundOrder = append(boundOrder, p.field)
			}
			if r.prefix == nil {
				continue // a null operand already matches nothing
			}
			if p.value.Kind == nokv.IndexScalarNull {
				r.prefix = nil
				continue
			}
			if p.value.Kind != kind {
				delete(bounds, p.field)
				boundOrder = slices.DeleteFunc(boundOrder, func(f string) bool { return f == p.field })
				continue
			}
			k, err := encode(p.value)
			if err != nil {
				return indexPlan{}, false, err
			}
			switch p.op {
			case "gte":
				r.lo = maxKey(r.lo, k)
			case "gt":
				r.lo = maxKey(r.lo, keySuccessor(k))
			case "lt":
				r.hi = minKey(r.hi, k)
			case "lte":
				r.hi = minKey(r.hi, keySuccessor(k))
			}
		}
	}
	for _, f := range boundOrder {
		r := bounds[f]
		plan := indexPlan{rank: 3}
		if r.prefix != nil && (r.lo == nil || r.hi == nil || bytes.Compare(r.lo, r.hi) < 0) {
			plan.ranges = []indexRange{*r}
		}
		take(plan)
	}
	return best, found, nil
}

// keySuccessor returns the least byte string greater than every string
// that begins with k (nil when there is none).
func keySuccessor(k []byte) []byte {
	for i := len(k) - 1; i >= 0; i-- {
		if k[i] != 0xff {
			out := slices.Clone(k[:i+1])
			out[i]++
			return out
		}
	}
	return nil
}

// maxKey returns the greater lower bound (nil: none).
func maxKey(a, b []byte) []byte {
	if a == nil || (b != nil && bytes.Compare(b, a) > 0) {
		return b
	}
	return a
}

// minKey returns the lesser upper bound (nil: none).
func minKey(a, b []byte) []byte {
	if a == nil || (b != nil && bytes.Compare(b, a) < 0) {
		return b
	}
	return a
}

// indexHit is an index row that names a path of the scope.
type indexHit struct {
	v    *core.View
	path []string
	key  []byte // its PathCurrent key
	row  nokv.SecondaryIndexEntry
}

// indexedRows returns the rows of scope q (over views, at sn) that the
// index ranges of plan name, rechecked against their markers and
// PathCurrent rows, in no particular order. ok is false when the index
// cannot answer after all, and the caller scans.
func indexedRows(ctx context.Context, s *core.Service, sn *head.Snapshot, views []*core.View, q queryScope, plan indexPlan) (rows []*core.QueryRow, ok bool, werr *core.Error) {
	byInc := make(map[nokv.IncarnationID]*core.View, len(views))
	for _, v := range views {
		byInc[v.Ws.Incarnation] = v
	}
	// Custom fields anywhere in the scope: only a scan can type them.
	custom, err := nokv.SecondaryIndexValuePrefix(s.Root(), core.CustomFieldsIndexID, nokv.NullScalar())
	if err != nil {
		return nil, false, core.FromError(err)
	}
	if q.id != "" {
		inc := views[0].Ws.Incarnation
		custom = append(custom, inc[:]...)
	}
	if recs, err := sn.Scan(ctx, nokv.FamilySecondaryIndex, custom, nil, 1); err != nil {
		return nil, false, core.FromError(err)
	} else if len(recs) > 0 {
		return nil, false, nil
	}

	var hits []indexHit
	scanned := 0 // index rows in the ranges, in the scope or not
	for _, r := range plan.ranges {
		recs, err := sn.Scan(ctx, nokv.FamilySecondaryIndex, r.prefix, r.lo, queryIndexMaxHits+1-scanned)
		if err != nil {
			return nil, false, core.FromError(err)
		}
		for _, rec := range recs {
			if r.hi != nil && bytes.Compare(rec.Key, r.hi) >= 0 {
				break
			}
			if scanned++; scanned > queryIndexMaxHits {
				return nil, false, nil // not selective: scan
			}
			k, err := nokv.ParseSecondaryIndexKey(rec.Key)
			if err != nil {
				return nil, false, core.FromError(err)
			}
			v := byInc[k.Incarnation]
			if v == nil || len(k.Path) < len(q.prefix) || !slices.Equal(k.Path[:len(q.prefix)], q.prefix) {
				continue
			}
			e, err := nokv.DecodeSecondaryIndexEntry(rec.Value)
			if err != nil {
				return nil, false, core.FromError(err)
			}
			pk, err := nokv.PathCurrentKey{Root: s.Root(), Incarnation: k.Incarnation, Path: k.Path}.Encode()
			if err != nil {
				return nil, false, core.FromError(err)
			}
			hits = append(hits, indexHit{v: v, path: k.Path, key: pk, row: e})
		}
	}

	// The recheck: every hit's PathCurrent row at sn. The shards (of a
	// paged shard, its page index) are fetched together first, then the
	// point reads run in parallel, so the pages they need come in one
	// round more.
	var refs []head.ShardRef
	for _, h := range hits {
		ref, err := sn.ShardOf(nokv.FamilyPathCurrent, h.key)
		if err != nil {
			return nil, false, core.FromError(err)
		}
		if !slices.ContainsFunc(refs, func(r head.ShardRef) bool { return r.Family == ref.Family && r.Index == ref.Index }) {
			refs = append(refs, ref)
		}
	}
	if len(refs) > 0 {
		if err := sn.Prefetch(ctx, nil, refs); err != nil {
			return nil, false, core.FromError(err)
		}
	}
	found := make([]*core.QueryRow, len(hits))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(queryRecheckConcurrency)
	for i, h := range hits {
		g.Go(func() error {
			b, exists, err := sn.Get(gctx, nokv.FamilyPathCurrent, h.key)
			if err != nil || !exists {
				return err
			}
			e, err := nokv.DecodePathEntry(b)
			if err != nil {
				return err
			}
			if e.Generation == h.row.PathGeneration && e.Revision == h.row.Revision {
				found[i] = &core.QueryRow{Wb: h.v.ID, Path: h.path, E: e}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, false, core.FromError(err)
	}
	rows = slices.DeleteFunc(found, func(r *core.QueryRow) bool { return r == nil })
	s.QueryIndexAnswers.Add(1)
	return rows, true, nil
}
