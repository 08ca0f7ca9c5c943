package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/cairnstore/cairn/bucket"
)

// TestDirSyncFailure injects a failing directory sync. A write or delete
// that cannot make its directory durable must fail: ErrAmbiguous once the
// change is visible, a plain error (with nothing left behind) before.
func TestDirSyncFailure(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "k", []byte("v1"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "d/existing", []byte("v1"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	injected := errors.New("injected sync failure")
	var synced []string
	b.syncDir = func(d string) error {
		synced = append(synced, d)
		return injected
	}

	// Into an existing directory: visible, not known durable.
	for _, k := range []string{"k", "d/existing"} {
		a, err := b.Put(ctx, k, []byte("v2"), bucket.Unconditional)
		if !errors.Is(err, bucket.ErrAmbiguous) || !errors.Is(err, injected) || a != (bucket.Attrs{}) {
			t.Fatalf("put %q with failing dir sync = %+v, %v; want ErrAmbiguous", k, a, err)
		}
		if got, _, err := b.Get(ctx, k); err != nil || string(got) != "v2" {
			t.Fatalf("get %q = %q, %v", k, got, err)
		}
	}

	// Into a new directory: the new directory cannot be synced into its
	// parent, so nothing is renamed and the directories are removed.
	_, err = b.Put(ctx, "new/dir/k", []byte("v"), bucket.Unconditional)
	if err == nil || errors.Is(err, bucket.ErrAmbiguous) || !errors.Is(err, injected) {
		t.Fatalf("put into a new directory with failing sync: %v, want a plain failure", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "dnew")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("directory of a failed write kept: %v", err)
	}
	if _, err := b.Stat(ctx, "new/dir/k"); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("stat after failed write: %v", err)
	}

	if err := b.Delete(ctx, "k", bucket.Unconditional); !errors.Is(err, bucket.ErrAmbiguous) {
		t.Fatalf("delete with failing dir sync: %v, want ErrAmbiguous", err)
	}
	want := []string{dir, filepath.Join(dir, "dd"), dir, dir}
	if strings.Join(synced, "\n") != strings.Join(want, "\n") {
		t.Errorf("synced %q, want %q", synced, want)
	}
	noTemps(t, dir)
}

// TestNewDirectoriesAreSynced checks that a write creating directories
// syncs each new one into its parent, and the object's own directory.
func TestNewDirectoriesAreSynced(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	var synced []string
	b.syncDir = func(d string) error {
		synced = append(synced, d)
		return syncDir(d)
	}
	if _, err := b.Put(ctx, "a/b/c", []byte("v"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	want := []string{dir, dir + "/da", dir + "/da/db"}
	if strings.Join(synced, "\n") != strings.Join(want, "\n") {
		t.Errorf("synced %q, want %q", synced, want)
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "a", "%", "..", "é", "a b/c", "\x00\xff", "%41", "o%2F"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := escape(s)
		for i := 0; i < len(e); i++ {
			if !plain(e[i]) && e[i] != '%' {
				t.Fatalf("escape(%q) = %q has byte %q", s, e, e[i])
			}
		}
		if got, ok := unescape(e); !ok || got != s {
			t.Fatalf("unescape(escape(%q)) = %q, %v", s, got, ok)
		}
		// Only canonical names decode, so every key has one file name.
		if got, ok := unescape(s); ok && escape(got) != s {
			t.Fatalf("unescape(%q) = %q, which escapes to %q", s, got, escape(got))
		}
	})
}

func FuzzLocate(f *testing.F) {
	for _, k := range []string{"a", "a/b", "a//b", "b/", "/x", "./..", "é/ü"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if bucket.ValidateKey(key) != nil || !utf8.ValidString(key) {
			return
		}
		l, err := locate("/root", key)
		if err != nil {
			if !errors.Is(err, bucket.ErrInvalidKey) {
				t.Fatalf("locate(%q): %v", key, err)
			}
			return
		}
		// Decode the path back into the key.
		rel := strings.TrimPrefix(l.path, "/root/")
		parts := strings.Split(rel, "/")
		var segs []string
		for i, p := range parts {
			kind := byte('d')
			if i == len(parts)-1 {
				kind = 'o'
			}
			if p == "" || p[0] != kind {
				t.Fatalf("locate(%q) = %q: part %q", key, l.path, p)
			}
			s, ok := unescape(p[1:])
			if !ok {
				t.Fatalf("locate(%q) = %q: part %q does not decode", key, l.path, p)
			}
			segs = append(segs, s)
		}
		if got := strings.Join(segs, "/"); got != key {
			t.Fatalf("locate(%q) = %q, which decodes to %q", key, l.path, got)
		}
		if len(l.dirs) != len(parts)-1 {
			t.Fatalf("locate(%q): %d dirs for %d parts", key, len(l.dirs), len(parts))
		}
	})
}

// TestClassifyPermanent: the file system's refusals that another try
// cannot change are classified once, here, as the port's permanent
// sentinels, and the cause stays in the chain; an error already
// classified, or a write that took effect, is left alone.
func TestClassifyPermanent(t *testing.T) {
	path := func(errno syscall.Errno) error {
		return &fs.PathError{Op: "open", Path: "/d/.tmp-1", Err: errno}
	}
	for _, c := range []struct {
		err       error
		sentinel  error
		permanent bool
	}{
		{path(syscall.EACCES), bucket.ErrDenied, true},
		{path(syscall.EPERM), bucket.ErrDenied, true},
		{path(syscall.EROFS), bucket.ErrDenied, true},
		{path(syscall.ENOSPC), bucket.ErrNoSpace, true},
		{path(syscall.EDQUOT), bucket.ErrNoSpace, true},
		{path(syscall.EIO), nil, false},
		{fmt.Errorf("%w: written but not synced: %w", bucket.ErrAmbiguous, path(syscall.ENOSPC)), bucket.ErrAmbiguous, false},
	} {
		err := opErr("put", "k", c.err)
		if got := bucket.Permanent(err); got != c.permanent {
			t.Errorf("opErr(%v): Permanent = %v, want %v", c.err, got, c.permanent)
		}
		if c.sentinel != nil && !errors.Is(err, c.sentinel) {
			t.Errorf("opErr(%v) = %v, want %v in the chain", c.err, err, c.sentinel)
		}
		if !errors.Is(err, c.err) {
			t.Errorf("opErr(%v) = %v lost the cause", c.err, err)
		}
	}
}

// TestPutDeniedIsPermanent: a write into a directory the process may not
// write is ErrDenied, not a plain error the engine would retry. Root
// ignores directory permissions, so as root the refusal is classified
// directly.
func TestPutDeniedIsPermanent(t *testing.T) {
	b, err := Create(filepath.Join(t.TempDir(), "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if os.Geteuid() == 0 {
		if err := opErr("put", "k", &fs.PathError{Op: "open", Path: b.dir, Err: syscall.EACCES}); !errors.Is(err, bucket.ErrDenied) {
			t.Fatalf("denied put: %v, want ErrDenied", err)
		}
		return
	}
	if err := os.Chmod(b.dir, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(b.dir, 0o755)
	_, err = b.Put(context.Background(), "k", []byte("v"), bucket.Unconditional)
	if !errors.Is(err, bucket.ErrDenied) || !bucket.Permanent(err) || bucket.Transient(err) {
		t.Fatalf("put into an unwritable directory: %v, want ErrDenied, permanent", err)
	}
}

// FuzzDecodeHeader: an object file's bytes, however damaged, never panic
// the reader. A header that fails is bucket.ErrIntegrity, or names a
// format this build does not read when its own checksum, magic and
// version byte say so; a header that passes, over a body that passes its
// checksum, is exactly the header the writer makes of that token and body.
func FuzzDecodeHeader(f *testing.F) {
	for i, body := range []string{"", "x", "a body of some bytes\n", strings.Repeat("\x00\xff", 100)} {
		var token [tokenLen]byte
		token[0], token[tokenLen-1] = byte(i), 0x5a
		_, hb := encode(token, []byte(body))
		f.Add(append(hb, body...))
	}
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decode(b, int64(len(b)))
		if err != nil {
			if !errors.Is(err, bucket.ErrIntegrity) && !(len(b) >= headerLen && b[len(magic)] != formatVersion) {
				t.Fatalf("decode: %v is not ErrIntegrity", err)
			}
			return
		}
		body := b[headerLen:]
		if h.size != int64(len(body)) {
			t.Fatalf("header says %d bytes, body has %d", h.size, len(body))
		}
		if crc32.Checksum(body, castagnoli) != h.crc {
			return // Get refuses it: ErrIntegrity
		}
		if _, hb := encode(h.token, body); !bytes.Equal(hb, b[:headerLen]) {
			t.Fatalf("header %x re-encodes as %x", b[:headerLen], hb)
		}
	})
}

// TestPutsUnderASyncGroup: under a bucket.SyncGroup, a put is readable at
// once but not synced; the group's Sync makes every put of it durable
// with one sync of the file system, or, where the bucket has none, with
// an fsync of each file and of each directory. A put outside a group is
// synced as before.
func TestPutsUnderASyncGroup(t *testing.T) {
	ctx := context.Background()
	for _, withFS := range []bool{true, false} {
		b, err := New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		var fsSyncs int
		b.syncFS = nil
		if withFS {
			b.syncFS = func(dir string) error {
				if dir != b.dir {
					t.Errorf("synced the file system of %s, want the bucket's %s", dir, b.dir)
				}
				fsSyncs++
				return nil
			}
		}
		// The directories exist first, as in a running store.
		for _, k := range []string{"x/k0", "y/k0"} {
			if _, err := b.Put(ctx, k, []byte("v"), bucket.Unconditional); err != nil {
				t.Fatal(err)
			}
		}
		f0, d0 := b.Syncs()
		g := bucket.NewSyncGroup()
		gctx := bucket.WithSyncGroup(ctx, g)
		keys := []string{"x/k1", "x/k2", "x/k3", "y/k1"}
		for _, k := range keys {
			if _, err := b.Put(gctx, k, []byte("body of "+k), bucket.Unconditional); err != nil {
				t.Fatal(err)
			}
			if got, _, err := b.Get(ctx, k); err != nil || string(got) != "body of "+k {
				t.Fatalf("get %s before Sync: %q, %v", k, got, err)
			}
		}
		if f, d := b.Syncs(); f != f0 || d != d0 || fsSyncs != 0 {
			t.Fatalf("withFS %v: puts under a group synced %d files, %d directories, %d file systems before Sync", withFS, f-f0, d-d0, fsSyncs)
		}
		if err := g.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		f, d := b.Syncs()
		if withFS && (fsSyncs != 1 || f != f0 || d != d0) {
			t.Errorf("with syncfs: Sync made %d file-system syncs, %d file and %d directory fsyncs; want 1, 0, 0", fsSyncs, f-f0, d-d0)
		}
		if !withFS && (f-f0 != int64(len(keys)) || d-d0 != 2) {
			t.Errorf("without syncfs: Sync fsynced %d files and %d directories; want %d and 2", f-f0, d-d0, len(keys))
		}
		if withFS && b.FileSystemSyncs() != 1 {
			t.Errorf("FileSystemSyncs %d, want 1", b.FileSystemSyncs())
		}
		// Outside a group, a put syncs its file and directory itself.
		if _, err := b.Put(ctx, "x/k4", []byte("v"), bucket.Unconditional); err != nil {
			t.Fatal(err)
		}
		f, d = b.Syncs()
		// Under a group, a put over an object that is there (another
		// writer's, which that writer's head may refer to) syncs its file
		// before the rename: an unsynced file never replaces an object.
		if _, err := b.Put(gctx, "x/k4", []byte("replaced"), bucket.Unconditional); err != nil {
			t.Fatal(err)
		}
		if got, _, err := b.Get(ctx, "x/k4"); err != nil || string(got) != "replaced" {
			t.Fatalf("get after a grouped put over an object: %q, %v", got, err)
		}
		if f2, _ := b.Syncs(); f2 != f+1 {
			t.Errorf("a grouped put over an object fsynced %d files before Sync, want 1", f2-f)
		}
		if err := g.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		noTemps(t, b.dir)
	}
}

// TestGroupedPutWithoutHardLinks: on a file system that makes no hard
// links, a put under a sync group falls back to a synced file and a
// rename, and succeeds.
func TestGroupedPutWithoutHardLinks(t *testing.T) {
	ctx := context.Background()
	b, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "x/k0", []byte("v"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	defer func(l func(string, string) error, lf func(rawFile, string) error) { link, linkFD = l, lf }(link, linkFD)
	link = func(string, string) error { return &os.LinkError{Op: "link", Err: syscall.EPERM} }
	linkFD = func(rawFile, string) error { return &os.LinkError{Op: "link", Err: syscall.EPERM} }
	f0, _ := b.Syncs()
	g := bucket.NewSyncGroup()
	if _, err := b.Put(bucket.WithSyncGroup(ctx, g), "x/k1", []byte("v1"), bucket.Unconditional); err != nil {
		t.Fatalf("grouped put without hard links: %v", err)
	}
	if got, _, err := b.Get(ctx, "x/k1"); err != nil || string(got) != "v1" {
		t.Fatalf("get: %q, %v", got, err)
	}
	if f, _ := b.Syncs(); f != f0+1 {
		t.Errorf("fsynced %d files, want the one written, before its rename", f-f0)
	}
	if err := g.Sync(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestPutSyncsGroupFirst: a put under bucket.WithSyncFirst syncs the
// group before its own object is visible, its temporary file with the
// group's objects in that one sync of the file system (no fsync of its
// own file), then its directory; a sync that fails fails the put,
// placing nothing, and marks the group Failed. Without a syncfs the
// group is synced first and the put's file fsynced as usual.
func TestPutSyncsGroupFirst(t *testing.T) {
	ctx := context.Background()
	for _, withFS := range []bool{true, false} {
		b, err := New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		fsSyncs := 0
		b.syncFS = nil
		if withFS {
			b.syncFS = func(string) error { fsSyncs++; return nil }
		}
		if got := b.Capabilities().SyncsGroupFirst; got != withFS {
			t.Fatalf("withFS %v: SyncsGroupFirst %v", withFS, got)
		}
		if _, err := b.Put(ctx, "d/head", []byte("v0"), bucket.Unconditional); err != nil {
			t.Fatal(err)
		}
		g := bucket.NewSyncGroup()
		if _, err := b.Put(bucket.WithSyncGroup(ctx, g), "d/staged", []byte("s"), bucket.Unconditional); err != nil {
			t.Fatal(err)
		}
		seen := ""
		g.Defer("probe", func(context.Context) error {
			got, _, err := b.Get(ctx, "d/head")
			seen = string(got)
			return err
		})
		f0, d0 := b.Syncs()
		if _, err := b.Put(bucket.WithSyncFirst(ctx, g), "d/head", []byte("v1"), bucket.Unconditional); err != nil {
			t.Fatal(err)
		}
		if seen != "v0" {
			t.Fatalf("withFS %v: the group synced while the head held %q, want the old v0", withFS, seen)
		}
		f, d := b.Syncs()
		switch {
		case withFS && (fsSyncs != 1 || f != f0 || d-d0 != 1):
			t.Errorf("with syncfs: %d file-system syncs, %d file and %d directory fsyncs; want 1, 0, 1", fsSyncs, f-f0, d-d0)
		case !withFS && (f-f0 != 2 || d-d0 != 2):
			// The staged file and its directory (the group), the head's
			// file and its directory.
			t.Errorf("without syncfs: %d file and %d directory fsyncs; want 2 and 2", f-f0, d-d0)
		}
		if got, _, err := b.Get(ctx, "d/head"); err != nil || string(got) != "v1" {
			t.Fatalf("the head after the put: %q, %v", got, err)
		}
		// A failed sync: nothing placed, the group failed.
		bad := bucket.NewSyncGroup()
		bad.Defer("broken", func(context.Context) error { return errors.New("disk gone") })
		if _, err := b.Put(bucket.WithSyncFirst(ctx, bad), "d/head", []byte("v2"), bucket.Unconditional); !errors.Is(err, bucket.ErrUnavailable) {
			t.Fatalf("a put whose group failed to sync: %v, want ErrUnavailable", err)
		}
		if got, _, err := b.Get(ctx, "d/head"); err != nil || string(got) != "v1" || !bad.Failed() {
			t.Fatalf("after a failed sync: head %q (%v), group failed %v; want v1 and true", got, err, bad.Failed())
		}
		if tmps, err := b.RemoveTemps(ctx, 0, true); err != nil || tmps != 0 {
			t.Fatalf("temporary files left: %d, %v", tmps, err)
		}
	}
}

// unnamedBucket returns a new bucket holding the object x/k0, or skips t
// where the system makes no unnamed files (grouped puts then use named
// ones, as TestGroupedPutWithoutHardLinks checks).
func unnamedBucket(t *testing.T) *Bucket {
	t.Helper()
	b, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := openUnnamed(b.dir); !ok {
		t.Skip("this system makes no unnamed files; grouped puts use named ones")
	}
	if _, err := b.Put(context.Background(), "x/k0", []byte("v"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGroupedPutsAreUnnamedUntilPlaced: where the system makes unnamed
// files, a put under a sync group writes its object to one and links it
// into place (no temporary name in the root); one over an existing object
// is named, synced and renamed, as before; both read back.
func TestGroupedPutsAreUnnamedUntilPlaced(t *testing.T) {
	ctx := context.Background()
	b := unnamedBucket(t)
	defer func(lf func(rawFile, string) error) { linkFD = lf }(linkFD)
	linked := map[string]bool{}
	linkFD = func(f rawFile, path string) error {
		err := f.linkAt(path)
		if err == nil {
			linked[path] = true
		}
		return err
	}
	g := bucket.NewSyncGroup()
	gctx := bucket.WithSyncGroup(ctx, g)
	for _, k := range []string{"x/k1", "new/k2"} {
		if _, err := b.Put(gctx, k, []byte("body of "+k), bucket.IfAbsent()); err != nil {
			t.Fatal(err)
		}
	}
	if len(linked) != 2 {
		t.Errorf("unnamed files linked into place for two grouped puts: %v, want two", linked)
	}
	f0, _ := b.Syncs()
	if _, err := b.Put(gctx, "x/k1", []byte("replaced"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if f, _ := b.Syncs(); f != f0+1 {
		t.Errorf("a grouped put over an object fsynced %d files, want 1", f-f0)
	}
	if err := g.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"x/k1": "replaced", "new/k2": "body of new/k2"} {
		if got, _, err := b.Get(ctx, k); err != nil || string(got) != want {
			t.Errorf("get %s: %q, %v; want %q", k, got, err, want)
		}
	}
	noTemps(t, b.dir)
}

// noTemps fails t if a temporary file is left in the bucket's root dir.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}
