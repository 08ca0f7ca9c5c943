package head_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
)

// TestStageWritesWithTheCommit: an object a command stages is in the
// bucket once its command landed; a command that fails stages nothing,
// and two runs of a command get different salts.
func TestStageWritesWithTheCommit(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	s := open(t, b, shards.NewShardID(), head.Options{})
	var salts [][16]byte
	stage := func(name string, fail bool) head.Command {
		return head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
			salt := tx.Salt()
			if tx.Salt() != salt {
				t.Error("Salt changed within one run")
			}
			salts = append(salts, salt)
			tx.Stage("product/"+name, []byte(name))
			if fail {
				return nil, errors.New("refused")
			}
			return nil, tx.Put(fam, key(len(salts)), []byte(name))
		}}
	}
	if _, err := s.Do(ctx, stage("kept", false)); err != nil {
		t.Fatal(err)
	}
	if body, _, err := b.Get(ctx, "product/kept"); err != nil || string(body) != "kept" {
		t.Fatalf("the staged object: %q, %v", body, err)
	}
	if _, err := s.Do(ctx, stage("dropped", true)); err == nil {
		t.Fatal("a failing command landed")
	}
	if _, _, err := b.Get(ctx, "product/dropped"); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("a failed command's object: %v, want ErrNotExist", err)
	}
	if len(salts) != 2 || salts[0] == salts[1] {
		t.Fatalf("salts %s", fmt.Sprint(salts))
	}
}
