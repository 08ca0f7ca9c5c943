package roots

import (
	"context"

	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/shards"
)

// LoadTable returns table h from c, or on a miss fetches its bytes, which
// the cache verifies against h before they are decoded against schema s
// (and never caches when either fails). The bytes are hashed once. Every
// table in c must have been loaded with s.
func LoadTable(ctx context.Context, c *shards.Cache[*Table], s *shards.Schema, h digest.Hash, fetch func(context.Context) ([]byte, error)) (*Table, error) {
	return c.Load(ctx, h, fetch, func(b []byte) (*Table, error) { return parseTable(s, b, h) })
}

// LoadRoot is LoadTable for roots.
func LoadRoot(ctx context.Context, c *shards.Cache[*Root], s *shards.Schema, h digest.Hash, fetch func(context.Context) ([]byte, error)) (*Root, error) {
	return c.Load(ctx, h, fetch, func(b []byte) (*Root, error) { return parseRoot(s, b, h) })
}
