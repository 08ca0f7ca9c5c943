package workbench_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// TestInspect reads a workbench's state, its last commit, and a restore
// stopped between its commands, as the console shows them.
func TestInspect(t *testing.T) {
	defer workbench.SetRestoreBatchForTest(4)()
	ctx := context.Background()
	s := newService(t)
	commit := restoreSource(t, s, "src", 10)
	v, err := s.Inspect(ctx, "src")
	if err != nil {
		t.Fatal(err)
	}
	if v.State != "Visible" || v.Restore != nil || v.Commit == nil || v.Commit.CommitID != commit || v.Commit.MemberCount != 11 || v.ReadVersion < v.ModifiedVersion {
		t.Fatalf("src: %+v, commit %+v", v, v.Commit)
	}
	// A restore stopped after its second copy command is staging, owned
	// by the restore, 8 of its 10 members placed (the run manifest is
	// written anew, not copied).
	steps := 0
	workbench.SetRestoreHookForTest(s, func(step string) error {
		if steps++; steps == 3 {
			return errors.New("crash after the second copy batch")
		}
		return nil
	})
	if _, ok := call(t, s, "workbench_restore", restoreIn("src", "dst", fmt.Sprintf(`"at_commit":%q`, commit))); ok {
		t.Fatal("the restore did not stop")
	}
	workbench.SetRestoreHookForTest(s, nil)
	v, err = s.Inspect(ctx, "dst")
	if err != nil {
		t.Fatal(err)
	}
	r := v.Restore
	if v.State != "Staging" || r == nil || r.SourceWorkbenchID != "src" || r.SourceCommit == nil || *r.SourceCommit != commit || r.SourceSnapshot != nil || r.MemberCursor != 8 || r.MemberCount != 10 || v.Commit != nil {
		t.Fatalf("dst: %+v, restore %+v", v, r)
	}
	if _, err := s.Inspect(ctx, "nope"); workbench.FromError(err).Code != workbench.CodeNotFound {
		t.Errorf("a missing workbench: %v", err)
	}
	if _, err := s.Inspect(ctx, "no/such"); workbench.FromError(err).Code != workbench.CodeInvalidArguments {
		t.Errorf("a bad id: %v", err)
	}
}

// TestCommitMembersPage pages through a commit's members: every member
// once, in path order, whatever the page size.
func TestCommitMembersPage(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	restoreSource(t, s, "src", 10)
	all, err := s.CommitMembersPage(ctx, "src", "", "", workbench.MaxMembersLimit)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Members) != 11 || all.NextCursor != "" || all.MemberCount != 11 {
		t.Fatalf("one page: %d members, next %q, count %d", len(all.Members), all.NextCursor, all.MemberCount)
	}
	for i, m := range all.Members {
		if i > 0 && workbench.ComparePaths(strings.Split(all.Members[i-1].Path, "/"), strings.Split(m.Path, "/")) >= 0 {
			t.Errorf("%s after %s", m.Path, all.Members[i-1].Path)
		}
		if m.Generation != 1 || !strings.HasPrefix(m.DigestURI, "sha256:") || len(m.Revision) != 32 {
			t.Errorf("member %+v", m)
		}
	}
	for _, limit := range []int{1, 3, 10} {
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			p, err := s.CommitMembersPage(ctx, "src", "", cursor, limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Members) > limit || pages > 11 {
				t.Fatalf("limit %d: a page of %d", limit, len(p.Members))
			}
			for _, m := range p.Members {
				got = append(got, m.Path)
			}
			if cursor = p.NextCursor; cursor == "" {
				break
			}
		}
		var want []string
		for _, m := range all.Members {
			want = append(want, m.Path)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("limit %d:\n got %v\nwant %v", limit, got, want)
		}
	}
	for _, limit := range []int{0, workbench.MaxMembersLimit + 1} {
		if _, err := s.CommitMembersPage(ctx, "src", "", "", limit); workbench.FromError(err).Code != workbench.CodeInvalidArguments {
			t.Errorf("limit %d: %v", limit, err)
		}
	}
	mustCall(t, s, "workbench_create", `{"id":"fresh"}`)
	if _, err := s.CommitMembersPage(ctx, "fresh", "", "", 10); workbench.FromError(err).Code != workbench.CodeNotFound {
		t.Errorf("an uncommitted workbench: %v", err)
	}
}

// TestCommitMembersPageOfAnEarlierCommit opens a commit by its id: the
// members it sealed, not the workbench's last, and its parents.
func TestCommitMembersPageOfAnEarlierCommit(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	first := restoreSource(t, s, "src", 3)
	mustCall(t, s, "workbench_put_file", `{"id":"src","section":"outputs","path":"dir0/f000.txt","text":"body 0, again","replace":true}`)
	second := mustCall(t, s, "workbench_commit", commitInput("src", `{"task":"again"}`, digestAA, true))["commit_identity"].(string)
	last, err := s.CommitMembersPage(ctx, "src", "", "", 100)
	if err != nil {
		t.Fatal(err)
	}
	old, err := s.CommitMembersPage(ctx, "src", first, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	gen := func(p *workbench.MembersPage, path string) uint64 {
		for _, m := range p.Members {
			if m.Path == path {
				return m.Generation
			}
		}
		t.Fatalf("commit %s has no %s", p.CommitID, path)
		return 0
	}
	if last.CommitID != second || old.CommitID != first || old.State != "Sealed" {
		t.Fatalf("commits %s (%s), %s", last.CommitID, last.State, old.CommitID)
	}
	if g, h := gen(old, "outputs/dir0/f000.txt"), gen(last, "outputs/dir0/f000.txt"); g != 1 || h != 2 {
		t.Errorf("the file's generation is %d in the first commit and %d in the second", g, h)
	}
	if len(last.Parents) != 1 || last.Parents[0] != first || len(old.Parents) != 0 {
		t.Errorf("parents: %v and %v", last.Parents, old.Parents)
	}
	restoreSource(t, s, "other", 2)
	if _, err := s.CommitMembersPage(ctx, "other", first, "", 10); workbench.FromError(err).Code != workbench.CodeNotFound {
		t.Errorf("another workbench's commit: %v", err)
	}
	if _, err := s.CommitMembersPage(ctx, "src", "abc", "", 10); workbench.FromError(err).Code != workbench.CodeInvalidArguments {
		t.Errorf("a commit id that is not one: %v", err)
	}
}

// TestReadBody reads a body whole, checked against its digest, or its
// first bytes.
func TestReadBody(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	text := strings.Repeat("0123456789", 1000)
	putText(t, s, "wb", "big.txt", text)
	b, err := s.ReadBody(ctx, workbench.BodyInput{ID: "wb", Section: "outputs", Path: "big.txt"})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(text))
	if string(b.Bytes) != text || b.Truncated || *b.Card.DigestURI != "sha256:"+hex.EncodeToString(sum[:]) || *b.Card.SizeBytes != 10000 {
		t.Fatalf("whole: %d bytes, truncated %v, card %+v", len(b.Bytes), b.Truncated, b.Card)
	}
	b, err = s.ReadBody(ctx, workbench.BodyInput{ID: "wb", Section: "outputs", Path: "big.txt", Max: 25})
	if err != nil {
		t.Fatal(err)
	}
	if string(b.Bytes) != text[:25] || !b.Truncated {
		t.Fatalf("first 25: %q, truncated %v", b.Bytes, b.Truncated)
	}
	if _, err := s.ReadBody(ctx, workbench.BodyInput{ID: "wb", Section: "outputs", Path: "nope.txt"}); workbench.FromError(err).Code != workbench.CodeNotFound {
		t.Errorf("a missing file: %v", err)
	}
	if _, err := s.ReadBody(ctx, workbench.BodyInput{ID: "wb", Section: "attic", Path: "big.txt"}); workbench.FromError(err).Code != workbench.CodeInvalidArguments {
		t.Errorf("an unknown section: %v", err)
	}
}
