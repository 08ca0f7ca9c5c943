package file

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket"
)

// TestUnnamedFilesAreMadeInTheirDirectory checks that a grouped put's
// unnamed file is made in the directory it will be linked into when that
// directory exists, and in the root when it does not yet. ext4 allocates
// a file's inode near its directory's, so files all made in the root
// crowd one block group, whose allocator then passes over every inode
// freed there in the last seconds.
func TestUnnamedFilesAreMadeInTheirDirectory(t *testing.T) {
	ctx := context.Background()
	b := unnamedBucket(t)
	defer func(lf func(rawFile, string) error) { linkFD = lf }(linkFD)
	madeIn := map[string]string{} // object file -> directory of the unnamed file
	linkFD = func(f rawFile, path string) error {
		name, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(f.fd))
		if err != nil {
			t.Errorf("readlink of an unnamed file: %v", err)
		}
		madeIn[path] = filepath.Dir(strings.TrimSuffix(name, " (deleted)"))
		return f.linkAt(path)
	}
	g := bucket.NewSyncGroup()
	gctx := bucket.WithSyncGroup(ctx, g)
	for _, k := range []string{"x/k1", "new/k2"} {
		if _, err := b.Put(gctx, k, []byte("body of "+k), bucket.IfAbsent()); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"x/k1": "", "new/k2": b.dir} {
		l, err := locate(b.dir, k)
		if err != nil {
			t.Fatal(err)
		}
		if want == "" {
			want = l.parent(b.dir)
		}
		if got, ok := madeIn[l.path]; !ok || got != want {
			t.Errorf("%s: unnamed file made in %q (linked: %v), want %q", k, got, ok, want)
		}
	}
}
