package workbench_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// The typed methods of the history tools (commit, the snapshot tools,
// restore) against Call: a typed result prints the bytes Call answers
// for the same arguments, and a typed error is the *Error whose envelope
// Call answers.

// historyJSON prints a typed result as Call prints a result.
func historyJSON(t *testing.T, res any) string {
	t.Helper()
	b, err := workbench.MarshalResult(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameCall checks that got, a typed result printed, is Call's answer to
// tool and input.
func sameCall(t *testing.T, s *workbench.Service, got, tool, input string) {
	t.Helper()
	want, ok := s.Call(context.Background(), tool, []byte(input))
	if !ok {
		t.Fatalf("%s %s failed: %s", tool, input, want)
	}
	if got != string(want) {
		t.Fatalf("%s:\ntyped %s\ncall  %s", tool, got, want)
	}
}

// sameCallError checks that err, a typed method's error, is a
// *workbench.Error of code whose envelope is Call's answer to tool and
// input.
func sameCallError(t *testing.T, s *workbench.Service, err error, code, tool, input string) {
	t.Helper()
	var werr *workbench.Error
	if !errors.As(err, &werr) || werr.Code != code {
		t.Fatalf("%s: error %v, want %s", tool, err, code)
	}
	want, ok := s.Call(context.Background(), tool, []byte(input))
	if ok {
		t.Fatalf("%s %s succeeded: %s", tool, input, want)
	}
	if got := historyJSON(t, werr); got != string(want) {
		t.Fatalf("%s:\ntyped error %s\ncall error  %s", tool, got, want)
	}
}

// asReplay is a fresh result printed as its exact retry answers it.
func asReplay(fresh string) string {
	return strings.Replace(fresh, `"idempotent_replay":false`, `"idempotent_replay":true`, 1)
}

func TestCommitTyped(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	mustCall(t, s, "workbench_put_file", `{"id":"wb","section":"outputs","path":"a.txt","text":"a"}`)

	// A fresh commit of a manifest given as a Go map: its exact retry,
	// through Call, answers the same bytes as a replay.
	res, err := s.Commit(ctx, workbench.CommitInput{ID: "wb", Manifest: map[string]any{"task": "typed", "n": 1}, ContentDigestURI: digest01})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "success" || res.IdempotentReplay || res.Generation != 1 || res.Replace {
		t.Fatalf("first commit %+v", res)
	}
	sameCall(t, s, asReplay(historyJSON(t, res)), "workbench_commit", commitInput("wb", `{"n":1,"task":"typed"}`, digest01))
	// The retry through the typed method, the manifest as raw JSON.
	res, err = s.Commit(ctx, workbench.CommitInput{ID: "wb", Manifest: json.RawMessage(`{"task":"typed","n":1}`), ContentDigestURI: digest01})
	if err != nil || !res.IdempotentReplay {
		t.Fatalf("retry %+v %v", res, err)
	}
	sameCall(t, s, historyJSON(t, res), "workbench_commit", commitInput("wb", `{"n":1,"task":"typed"}`, digest01))

	// replace, with a number whose text a raw manifest keeps ("1.0" is not
	// "1": another manifest digest).
	mustCall(t, s, "workbench_put_file", `{"id":"wb","section":"outputs","path":"b.txt","text":"b"}`)
	res, err = s.Commit(ctx, workbench.CommitInput{ID: "wb", Manifest: json.RawMessage(`{"n":1.0}`), ContentDigestURI: digest02, Replace: true})
	if err != nil || res.Generation != 2 || !res.Replace || res.IdempotentReplay {
		t.Fatalf("replace %+v %v", res, err)
	}
	sameCall(t, s, asReplay(historyJSON(t, res)), "workbench_commit", commitInput("wb", `{"n":1.0}`, digest02, true))

	// Refusals: a different commit without replace; a content digest the
	// schema refuses; no manifest at all.
	_, err = s.Commit(ctx, workbench.CommitInput{ID: "wb", Manifest: map[string]any{"n": 2}, ContentDigestURI: digest02})
	sameCallError(t, s, err, workbench.CodeWorkbenchCommitConflict, "workbench_commit", commitInput("wb", `{"n":2}`, digest02))
	_, err = s.Commit(ctx, workbench.CommitInput{ID: "wb", Manifest: map[string]any{}, ContentDigestURI: "sha256:AB"})
	sameCallError(t, s, err, workbench.CodeInvalidArguments, "workbench_commit", commitInput("wb", `{}`, "sha256:AB"))
	_, err = s.Commit(ctx, workbench.CommitInput{ID: "wb", ContentDigestURI: digest01})
	sameCallError(t, s, err, workbench.CodeInvalidArguments, "workbench_commit", `{"id":"wb","content_digest_uri":"`+digest01+`"}`)
}
