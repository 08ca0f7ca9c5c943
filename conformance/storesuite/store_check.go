package storesuite

// The end of a run: the audit of the final state and the verdicts drawn
// from it and the history.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/cairnstore/cairn/head"
)

// audit reads the final state through a fresh store over the shared bucket
// (no faults), records the final reads, checks the final root and walks
// the chain of roots.
func (r *storeRun) audit() error {
	ctx := r.ctx
	hopts := r.opts.Head
	hopts.Check = false
	auditor, err := head.Open(ctx, r.shared, r.id, storeSchema(), hopts)
	if err != nil {
		return fmt.Errorf("conformance: open the auditor: %w", err)
	}
	defer auditor.Close()
	call := r.now()
	sn, err := auditor.Pin(ctx)
	if err != nil {
		return fmt.Errorf("conformance: audit: pin: %w", err)
	}
	for k, key := range r.keys {
		v, _, err := sn.Get(ctx, storeFamily, key)
		if err != nil {
			return fmt.Errorf("conformance: audit: get key %d: %w", k, err)
		}
		r.final = append(r.final, storeSplitList(string(v)))
		r.history = append(r.history, porcupine.Operation{ClientId: r.rep.Clients, Input: storeInput{Key: k},
			Call: call, Output: storeOutput{List: string(v)}, Return: r.now()})
		r.rep.Reads++
	}
	r.rep.Commits = sn.Sequence() - r.initial
	r.rep.CASConflicts = r.conflicts.Load()
	if landed := r.landed.Load() - r.landed0; landed != int64(r.rep.Commits) {
		r.rep.Integrity = append(r.rep.Integrity, fmt.Sprintf("%d conditional head puts landed for %d commits", landed, r.rep.Commits))
	}
	if err := head.Check(ctx, r.shared, r.layout, sn.RootHash(), head.CheckOptions{Strict: true}); err != nil {
		r.rep.Integrity = append(r.rep.Integrity, fmt.Sprintf("final root %s fails head.Check: %v", sn.RootHash(), err))
	}
	// One root per sequence, each naming its predecessor, down to the
	// first.
	root, hash := sn.Root(), sn.RootHash()
	for root.Sequence > 1 {
		parent, err := auditor.At(ctx, root.Parent)
		if err != nil {
			r.rep.Integrity = append(r.rep.Integrity, fmt.Sprintf("root %s (sequence %d): parent %s: %v", hash, root.Sequence, root.Parent, err))
			break
		}
		if got, want := parent.Sequence(), root.Sequence-1; got != want {
			r.rep.Integrity = append(r.rep.Integrity, fmt.Sprintf("root %s has sequence %d, its parent %s has %d, want %d", hash, root.Sequence, root.Parent, got, want))
			break
		}
		root, hash = parent.Root(), parent.RootHash()
	}
	if root.Sequence == 1 && !root.Parent.IsZero() {
		r.rep.Integrity = append(r.rep.Integrity, fmt.Sprintf("first root %s names a parent %s", hash, root.Parent))
	}
	return nil
}

// check computes the report's verdicts from the history and final state.
func (r *storeRun) check() {
	rep := r.rep
	rep.Errors = r.errs
	rep.Operations = len(r.history)
	for k, list := range r.final {
		seen := map[string]bool{}
		for _, id := range list {
			if seen[id] {
				rep.Duplicates++
				rep.Details = append(rep.Details, fmt.Sprintf("id %s appears more than once in key %d", id, k))
			}
			seen[id] = true
			if ik, ok := r.issued[id]; !ok || ik != k {
				rep.Foreign++
				what := "which no client appended to it"
				if _, ok := r.failed[id]; ok {
					what = "whose append its client was told failed"
				}
				rep.Details = append(rep.Details, fmt.Sprintf("key %d holds id %s, %s", k, id, what))
			}
		}
	}
	var lost []string
	for id, k := range r.acked {
		if !slices.Contains(r.final[k], id) {
			lost = append(lost, fmt.Sprintf("%s (key %d)", id, k))
		}
	}
	sort.Strings(lost)
	rep.LostAcks = len(lost)
	if len(lost) > 0 {
		if len(lost) > 20 {
			lost = append(lost[:20], "...")
		}
		rep.Details = append(rep.Details, "acknowledged appends missing from the final state: "+strings.Join(lost, ", "))
	}
	byKey := make([][]porcupine.Operation, len(r.keys))
	for _, op := range r.history {
		in := op.Input.(storeInput)
		if op.Output.(storeOutput).Unknown {
			if !slices.Contains(r.final[in.Key], in.ID) {
				continue // never applied (see storeModel)
			}
			rep.UnknownApplied++
		}
		byKey[in.Key] = append(byKey[in.Key], op)
	}
	model := storeModel()
	for k, ops := range byKey {
		res, info := porcupine.CheckOperationsVerbose(model, ops, r.opts.CheckTimeout)
		switch res {
		case porcupine.Ok:
			continue
		case porcupine.Illegal:
			rep.Violations++
			rep.Details = append(rep.Details, fmt.Sprintf("key %d: history not linearizable (%d operations):", k, len(ops)))
		default:
			rep.Undecided++
			rep.Details = append(rep.Details, fmt.Sprintf("key %d: linearizability undecided after %v (%d operations):", k, r.opts.CheckTimeout, len(ops)))
		}
		rep.Details = append(rep.Details, storeDescribeHistory(ops, 60)...)
		if dir := os.Getenv(VizEnv); dir != "" && res == porcupine.Illegal {
			path := filepath.Join(dir, fmt.Sprintf("store-%s-%d-key%d.html", rep.Scenario, rep.Seed, k))
			if err := porcupine.VisualizePath(model, info, path); err != nil {
				rep.Details = append(rep.Details, "visualization: "+err.Error())
			} else {
				rep.Details = append(rep.Details, "visualization: "+path)
			}
		}
	}
}
