package bucket

import (
	"context"
	"fmt"
	"strings"
)

// WithPrefix returns a Bucket that keeps every key of b under prefix, which
// must end in "/". Keys, listings and attributes it returns are relative
// to the prefix. The conformance command uses it to work inside a fresh
// prefix of a user's bucket.
func WithPrefix(b Bucket, prefix string) (Bucket, error) {
	if err := validatePrefix(prefix); err != nil {
		return nil, err
	}
	return &prefixed{b: b, prefix: prefix}, nil
}

type prefixed struct {
	b      Bucket
	prefix string
}

var _ Bucket = (*prefixed)(nil)

func (p *prefixed) key(key string) (string, error) { return JoinKey(p.prefix, key) }

func (p *prefixed) attrs(a Attrs) Attrs {
	a.Key = strings.TrimPrefix(a.Key, p.prefix)
	return a
}

func (p *prefixed) Get(ctx context.Context, key string) ([]byte, Attrs, error) {
	k, err := p.key(key)
	if err != nil {
		return nil, Attrs{}, err
	}
	body, a, err := p.b.Get(ctx, k)
	if err != nil {
		return nil, Attrs{}, err
	}
	return body, p.attrs(a), nil
}

func (p *prefixed) Stat(ctx context.Context, key string) (Attrs, error) {
	k, err := p.key(key)
	if err != nil {
		return Attrs{}, err
	}
	a, err := p.b.Stat(ctx, k)
	if err != nil {
		return Attrs{}, err
	}
	return p.attrs(a), nil
}

func (p *prefixed) Put(ctx context.Context, key string, body []byte, cond Condition) (Attrs, error) {
	k, err := p.key(key)
	if err != nil {
		return Attrs{}, err
	}
	a, err := p.b.Put(ctx, k, body, cond)
	if err != nil {
		return Attrs{}, err
	}
	return p.attrs(a), nil
}

func (p *prefixed) Delete(ctx context.Context, key string, cond Condition) error {
	k, err := p.key(key)
	if err != nil {
		return err
	}
	return p.b.Delete(ctx, k, cond)
}

func (p *prefixed) List(ctx context.Context, opts ListOptions) (ListPage, error) {
	opts.Prefix = p.prefix + opts.Prefix
	if opts.StartAfter != "" {
		opts.StartAfter = p.prefix + opts.StartAfter
	}
	page, err := p.b.List(ctx, opts)
	if err != nil {
		return ListPage{}, err
	}
	for i := range page.Objects {
		page.Objects[i] = p.attrs(page.Objects[i])
	}
	for i, s := range page.Prefixes {
		if !strings.HasPrefix(s, p.prefix) {
			return ListPage{}, fmt.Errorf("bucket: prefixed list: %q outside %q", s, p.prefix)
		}
		page.Prefixes[i] = s[len(p.prefix):]
	}
	return page, nil
}

func (p *prefixed) Capabilities() Capabilities { return p.b.Capabilities() }

// Close does not close the wrapped bucket, which the caller still owns.
func (p *prefixed) Close() error { return nil }
