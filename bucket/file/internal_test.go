package file

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
