package conformance

// Bucket checks at the edges of the port: invalid and long keys,
// cancelled contexts, and what failed calls return.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cairnstore/cairn/bucket"
)

func checkInvalidKeys(ctx context.Context, b bucket.Bucket) error {
	bad := []string{"", strings.Repeat("k", bucket.MaxKeyLen+1), "bad\xffutf8", "line\nfeed", "carriage\rreturn", ".", ".."}
	for _, k := range bad {
		if _, _, err := b.Get(ctx, k); !errors.Is(err, bucket.ErrInvalidKey) {
			return fmt.Errorf("get %q: %v, want ErrInvalidKey", trunc([]byte(k)), err)
		}
		if _, err := b.Stat(ctx, k); !errors.Is(err, bucket.ErrInvalidKey) {
			return fmt.Errorf("stat %q: %v, want ErrInvalidKey", trunc([]byte(k)), err)
		}
		if _, err := b.Put(ctx, k, []byte("x"), bucket.Unconditional); !errors.Is(err, bucket.ErrInvalidKey) {
			return fmt.Errorf("put %q: %v, want ErrInvalidKey", trunc([]byte(k)), err)
		}
		if err := b.Delete(ctx, k, bucket.Unconditional); !errors.Is(err, bucket.ErrInvalidKey) {
			return fmt.Errorf("delete %q: %v, want ErrInvalidKey", trunc([]byte(k)), err)
		}
	}
	objs, _, err := bucket.ListAll(ctx, b, bucket.ListOptions{})
	if err != nil {
		return err
	}
	if len(objs) != 0 {
		return fmt.Errorf("invalid keys left %d objects behind", len(objs))
	}
	return nil
}

// checkLongKey writes a key of 900 bytes in nine 99-byte segments and a
// tail: long, but within MaxKeyLen with room for an adapter's prefix.
func checkLongKey(ctx context.Context, b bucket.Bucket) error {
	var segs []string
	for i := range 9 {
		segs = append(segs, strings.Repeat(string(rune('a'+i)), 98))
	}
	key := strings.Join(segs, "/") + "/"
	key += strings.Repeat("z", 900-len(key))
	if _, err := put(ctx, b, key, "long"); err != nil {
		return err
	}
	if _, err := wantBody(ctx, b, key, "long"); err != nil {
		return err
	}
	got, _, err := listKeys(ctx, b, bucket.ListOptions{})
	if err != nil {
		return err
	}
	return wantList("list", got, []string{key})
}

func checkCancelledContext(ctx context.Context, b bucket.Bucket) error {
	if _, err := put(ctx, b, "kept", "x"); err != nil {
		return err
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Put(cctx, "cancelled", []byte("x"), bucket.Unconditional); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("put with cancelled context: %v, want context.Canceled", err)
	}
	if _, err := b.Put(cctx, "kept", []byte("y"), bucket.IfAbsent()); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("conditional put with cancelled context: %v, want context.Canceled", err)
	}
	if _, _, err := b.Get(cctx, "kept"); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("get with cancelled context: %v, want context.Canceled", err)
	}
	if err := b.Delete(cctx, "kept", bucket.Unconditional); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("delete with cancelled context: %v, want context.Canceled", err)
	}
	if _, err := b.List(cctx, bucket.ListOptions{}); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("list with cancelled context: %v, want context.Canceled", err)
	}
	if err := wantMissing(ctx, b, "cancelled"); err != nil {
		return err
	}
	_, err := wantBody(ctx, b, "kept", "x")
	return err
}

func checkZeroValues(ctx context.Context, b bucket.Bucket) error {
	zero := bucket.Attrs{}
	body, a, err := b.Get(ctx, "missing")
	if err == nil || body != nil || a != zero {
		return fmt.Errorf("failed get returned %q, %+v, %v", body, a, err)
	}
	if a, err := b.Stat(ctx, "missing"); err == nil || a != zero {
		return fmt.Errorf("failed stat returned %+v, %v", a, err)
	}
	if _, err := put(ctx, b, "present", "x"); err != nil {
		return err
	}
	if a, err := b.Put(ctx, "present", []byte("y"), bucket.IfAbsent()); err == nil || a != zero {
		return fmt.Errorf("failed put returned %+v, %v", a, err)
	}
	if a, err := b.Put(ctx, "", []byte("y"), bucket.Unconditional); err == nil || a != zero {
		return fmt.Errorf("put of an invalid key returned %+v, %v", a, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if p, err := b.List(cctx, bucket.ListOptions{}); err == nil || p.Objects != nil || p.Prefixes != nil || p.NextPageToken != "" {
		return fmt.Errorf("failed list returned %+v, %v", p, err)
	}
	return nil
}
