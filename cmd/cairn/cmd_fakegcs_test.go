package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
)

// TestFakeGCS runs `cairn fake-gcs` in-process: it prints one URL per
// bucket, the URLs open and work, and cancelling the context (what SIGINT
// and SIGTERM do) ends it with status 0.
func TestFakeGCS(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, &env{stdout: pw, stderr: &stderr}, []string{"fake-gcs", "--addr", "127.0.0.1:0", "--dir", t.TempDir(), "--bucket", "alpha", "--bucket", "beta"})
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	var urls []string
	for len(urls) < 2 && sc.Scan() {
		urls = append(urls, sc.Text())
	}
	go io.Copy(io.Discard, pr)
	if len(urls) != 2 || !strings.HasPrefix(urls[0], "gs://alpha?endpoint=http") || !strings.HasPrefix(urls[1], "gs://beta?endpoint=http") {
		t.Fatalf("printed %q (stderr %q)", urls, stderr.String())
	}
	for _, u := range urls {
		if !strings.HasSuffix(u, "&emulator=fake-gcs-server") {
			t.Fatalf("printed %q, which does not declare the fake", u)
		}
		b, err := bucket.Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		if b.Capabilities().ConditionalDelete {
			t.Errorf("%s: the fake claims conditional delete", u)
		}
		a, err := b.Put(ctx, "k", []byte(u), bucket.IfAbsent())
		if err != nil {
			t.Fatal(err)
		}
		body, g, err := b.Get(ctx, "k")
		if err != nil || string(body) != u || g.Version != a.Version {
			t.Fatalf("round trip on %s: %q %+v %v", u, body, g, err)
		}
		b.Close()
	}
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit status %d after cancel, want 0 (stderr %q)", c, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("fake-gcs did not stop after cancel")
	}
}

func TestFakeGCSBadArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"fake-gcs", "extra"}, 2},
		{[]string{"fake-gcs", "--nope"}, 2},
		{[]string{"fake-gcs", "--addr", "0.0.0.0:0"}, 1},
		{[]string{"fake-gcs", "--addr", "127.0.0.1:0", "--bucket", "Not A Name"}, 1},
	} {
		var stderr bytes.Buffer
		if got := run(t.Context(), &env{stdout: io.Discard, stderr: &stderr}, c.args); got != c.want {
			t.Errorf("cairn %q: status %d, want %d (stderr %q)", c.args, got, c.want, stderr.String())
		}
		if stderr.Len() == 0 {
			t.Errorf("cairn %q: nothing on stderr", c.args)
		}
	}
}
