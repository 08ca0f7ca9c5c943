package workbench_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench"
)

// treeReads counts the reads of member tree nodes.
type treeReads struct {
	bucket.Bucket
	n atomic.Int64
}

func (b *treeReads) Get(ctx context.Context, key string) ([]byte, bucket.Attrs, error) {
	if strings.Contains(key, "/trees/") {
		b.n.Add(1)
	}
	return b.Bucket.Get(ctx, key)
}

// TestTreeCacheSparesTheLeaves: a commit that replaces one file of 600
// reads no node of its parent's tree when the tree cache holds the tree
// its replica built, also in a Service opened again for the agent with
// the same cache (as serve reopens an idle agent's); without a cache, or
// with a new one, it reads the nodes its change falls in.
func TestTreeCacheSparesTheLeaves(t *testing.T) {
	b := &treeReads{Bucket: mem.NewBucket()}
	shared := workbench.NewTreeCache(0)
	commitOne := func(t *testing.T, s *workbench.Service, wb string, round int) int64 {
		t.Helper()
		i := 100 * round
		mustCall(t, s, "workbench_put_file", putInput(wb, "outputs", fmt.Sprintf("d%d/f%03d.txt", i%7, i), fmt.Sprintf(`"text":"round %d"`, round), `"replace":true`))
		before := b.n.Load()
		mustCall(t, s, "workbench_commit", commitInput(wb, fmt.Sprintf(`{"n":%d}`, round), digest01, true))
		return b.n.Load() - before
	}
	for _, c := range []struct {
		name   string
		cache  *workbench.TreeCache
		budget int64
		reopen *workbench.TreeCache // the cache of the Service opened again
		cached bool                 // its commit reads nothing
	}{
		{name: "default", budget: 0, reopen: workbench.NewTreeCache(0)},
		{name: "shared", cache: shared, reopen: shared, cached: true},
		{name: "none", budget: -1, reopen: workbench.NewTreeCache(-1)},
		{name: "new", cache: workbench.NewTreeCache(0), reopen: workbench.NewTreeCache(0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			agent := "tree-" + c.name
			s := newServiceOn(t, b, workbench.Options{AgentID: agent, MemberTrees: true, TreeCache: c.cache, TreeCacheBytes: c.budget})
			for i := range 600 {
				mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", fmt.Sprintf("d%d/f%03d.txt", i%7, i), fmt.Sprintf(`"text":"file %d"`, i)))
			}
			mustCall(t, s, "workbench_commit", commitInput("wb", `{"n":0}`, digest01))
			got := commitOne(t, s, "wb", 1)
			if want := c.budget >= 0; (got == 0) != want {
				t.Fatalf("the second commit read %d tree nodes; cache kept: %v", got, want)
			}
			s.Close()
			again := newServiceOn(t, b, workbench.Options{AgentID: agent, MemberTrees: true, TreeCache: c.reopen})
			if got := commitOne(t, again, "wb", 3); (got == 0) != c.cached {
				t.Fatalf("the reopened Service's commit read %d tree nodes; cached: %v", got, c.cached)
			}
		})
	}
}
