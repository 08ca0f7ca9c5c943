package conformance

// Bucket checks of plain reads and writes: round trips, overwrites,
// missing keys, and reads that see the latest write.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/cairnstore/cairn/bucket"
)

func checkRoundTrip(ctx context.Context, b bucket.Bucket) error {
	body := "hello, cairn\x00\xff binary"
	a, err := put(ctx, b, "dir/obj", body)
	if err != nil {
		return err
	}
	if a.Key != "dir/obj" || a.Size != int64(len(body)) || a.Version == "" {
		return fmt.Errorf("put attrs = %+v, want key dir/obj, size %d, a version", a, len(body))
	}
	g, err := wantBody(ctx, b, "dir/obj", body)
	if err != nil {
		return err
	}
	s, err := b.Stat(ctx, "dir/obj")
	if err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	for _, x := range []bucket.Attrs{g, s} {
		if x.Key != a.Key || x.Size != a.Size || x.Version != a.Version {
			return fmt.Errorf("attrs %+v differ from put's %+v", x, a)
		}
		if x.ModTime.IsZero() {
			return fmt.Errorf("attrs %+v: no modification time", x)
		}
	}
	if g.Checksum != s.Checksum {
		return fmt.Errorf("checksum from get %q differs from stat %q", g.Checksum, s.Checksum)
	}
	return nil
}

func checkEmptyObject(ctx context.Context, b bucket.Bucket) error {
	a, err := put(ctx, b, "empty", "")
	if err != nil {
		return err
	}
	if a.Size != 0 {
		return fmt.Errorf("size %d, want 0", a.Size)
	}
	_, err = wantBody(ctx, b, "empty", "")
	return err
}

func checkMissingKeys(ctx context.Context, b bucket.Bucket) error {
	if _, _, err := b.Get(ctx, "nope"); !errors.Is(err, bucket.ErrNotExist) {
		return fmt.Errorf("get missing: %v, want ErrNotExist", err)
	}
	if err := wantMissing(ctx, b, "nope"); err != nil {
		return err
	}
	if err := b.Delete(ctx, "nope", bucket.Unconditional); err != nil {
		return fmt.Errorf("delete missing: %v, want nil", err)
	}
	_, err := b.Put(ctx, "nope", []byte("x"), bucket.IfVersion("1"))
	if err := wantErr("put if-version on missing", err, bucket.ErrPrecondition); err != nil {
		return err
	}
	return wantMissing(ctx, b, "nope")
}

func checkOverwrite(ctx context.Context, b bucket.Bucket) error {
	a1, err := put(ctx, b, "k", "one")
	if err != nil {
		return err
	}
	a2, err := put(ctx, b, "k", "two")
	if err != nil {
		return err
	}
	if a1.Version == a2.Version {
		return fmt.Errorf("overwrite with other bytes kept version %q", a1.Version)
	}
	_, err = wantBody(ctx, b, "k", "two")
	return err
}

func checkVersionsConsistent(ctx context.Context, b bucket.Bucket) error {
	p, err := put(ctx, b, "v/x", "stable")
	if err != nil {
		return err
	}
	for i := range 2 {
		_, g, err := b.Get(ctx, "v/x")
		if err != nil {
			return fmt.Errorf("get: %w", err)
		}
		s, err := b.Stat(ctx, "v/x")
		if err != nil {
			return fmt.Errorf("stat: %w", err)
		}
		objs, _, err := bucket.ListAll(ctx, b, bucket.ListOptions{Prefix: "v/"})
		if err != nil {
			return fmt.Errorf("list: %w", err)
		}
		if len(objs) != 1 {
			return fmt.Errorf("list returned %d objects, want 1", len(objs))
		}
		l := objs[0]
		for _, x := range []struct {
			op string
			a  bucket.Attrs
		}{{"get", g}, {"stat", s}, {"list", l}} {
			if x.a.Version != p.Version || x.a.Size != p.Size || x.a.Key != p.Key {
				return fmt.Errorf("read %d: %s attrs %+v, put gave %+v", i, x.op, x.a, p)
			}
		}
	}
	return nil
}

func checkReadAfterWrite(ctx context.Context, b bucket.Bucket) error {
	for i := range 10 {
		body := fmt.Sprintf("generation %d", i)
		if _, err := put(ctx, b, "raw", body); err != nil {
			return err
		}
		if _, err := wantBody(ctx, b, "raw", body); err != nil {
			return err
		}
	}
	if err := b.Delete(ctx, "raw", bucket.Unconditional); err != nil {
		return err
	}
	if _, _, err := b.Get(ctx, "raw"); !errors.Is(err, bucket.ErrNotExist) {
		return fmt.Errorf("get after delete: %v, want ErrNotExist", err)
	}
	return nil
}

func checkBigObject(ctx context.Context, b bucket.Bucket) error {
	body := make([]byte, 8<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < len(body); i += 8 {
		v := r.Uint64()
		for j := range 8 {
			body[i+j] = byte(v >> (8 * j))
		}
	}
	a, err := b.Put(ctx, "big", body, bucket.IfAbsent())
	if err != nil {
		return fmt.Errorf("put 8 MiB: %w", err)
	}
	if a.Size != int64(len(body)) {
		return fmt.Errorf("size %d, want %d", a.Size, len(body))
	}
	got, g, err := b.Get(ctx, "big")
	if err != nil {
		return fmt.Errorf("get 8 MiB: %w", err)
	}
	if !bytes.Equal(got, body) || g.Size != a.Size || g.Version != a.Version {
		return fmt.Errorf("8 MiB object did not round-trip (got %d bytes, attrs %+v)", len(got), g)
	}
	return nil
}
