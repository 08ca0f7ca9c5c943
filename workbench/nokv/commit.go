package nokv

import (
	"github.com/cairnstore/cairn/shards"
)

// Value format versions of the commit records. They live beside the
// records rather than in codec.go's table so that the history records can
// grow without touching the shared table.
const (
	WorkbenchCommitHeadVersion = 1
)

// WorkbenchCommitHeadKey is root_id | workspace_incarnation_id: one head
// per workbench incarnation, so a reclaimed name never inherits a head.
type WorkbenchCommitHeadKey struct {
	Root        RootID
	Incarnation IncarnationID
}

const recCommitHeadKey = "workbench_commit_head key"

// Family returns FamilyWorkbenchCommitHead.
func (WorkbenchCommitHeadKey) Family() shards.Family { return FamilyWorkbenchCommitHead }

// Encode returns the key's bytes.
func (k WorkbenchCommitHeadKey) Encode() ([]byte, error) {
	return shards.NewKey().ID16(k.Root).ID16(k.Incarnation).Build()
}

// ParseWorkbenchCommitHeadKey parses a WorkbenchCommitHead key.
func ParseWorkbenchCommitHeadKey(b []byte) (WorkbenchCommitHeadKey, error) {
	r := shards.NewKeyReader(b)
	k := WorkbenchCommitHeadKey{Root: r.ID16(), Incarnation: r.ID16()}
	if err := r.End(); err != nil {
		return WorkbenchCommitHeadKey{}, keyError("decode", recCommitHeadKey, r.Offset(), err)
	}
	return k, nil
}

// WorkbenchCommitHead is the value of a WorkbenchCommitHead row (version
// 1): the commit the workbench's head names and the head's generation.
//
//	commit_id [32] | head_generation u64
//
// HeadGeneration starts at 1 with the first commit and grows by one each
// time the head moves; it is the generation workbench_commit reports.
type WorkbenchCommitHead struct {
	Commit         CommitID
	HeadGeneration uint64
}

const recCommitHead = "workbench_commit_head value"

// Encode returns the value's bytes.
func (v WorkbenchCommitHead) Encode() ([]byte, error) {
	w := newValueWriter(recCommitHead, WorkbenchCommitHeadVersion)
	if v.Commit.IsZero() {
		w.fail("zero commit id", nil)
	}
	if v.HeadGeneration == 0 {
		w.fail("zero head generation", nil)
	}
	w.id32(v.Commit)
	w.u64(v.HeadGeneration)
	return w.finish()
}

// DecodeWorkbenchCommitHead decodes a WorkbenchCommitHead value.
func DecodeWorkbenchCommitHead(b []byte) (WorkbenchCommitHead, error) {
	r := newValueReader(recCommitHead, b, WorkbenchCommitHeadVersion)
	v := WorkbenchCommitHead{Commit: r.id32()}
	if r.err == nil && v.Commit.IsZero() {
		r.failAt(1, "zero commit id", nil)
	}
	off := r.offset()
	v.HeadGeneration = r.u64()
	if r.err == nil && v.HeadGeneration == 0 {
		r.failAt(off, "zero head generation", nil)
	}
	if err := r.end(); err != nil {
		return WorkbenchCommitHead{}, err
	}
	return v, nil
}
