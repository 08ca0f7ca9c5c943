package bodies

import "github.com/cairnstore/cairn/bucket/digest"

// Block is one block of a body: Size bytes from Offset of the object at
// Key, whose SHA-256 is Digest. Index is the block's physical index among
// the objects of the revision that owns it (BlockKey). The
// blocks a Store plans start at Offset zero and fill their object; a block
// read back from a manifest may name a slice of its object.
//
// A block whose Data is not nil already holds its bytes: a small body
// kept inline in its caller's metadata, which has no object (Key is
// empty). Stream checks Data against Size and Digest and sends no request
// for it. Blocks with Data are never staged, uploaded or discarded. A
// block may also be read ahead (Fetch.Use).
type Block struct {
	Index  uint64
	Key    string
	Offset uint64
	Size   uint64
	Digest digest.Hash
	Data   []byte

	pre *Fetch // a read of Key already under way
}

// Origin is what a ledger records about the call that staged its blocks,
// for whoever cleans up after it. The Store does not interpret it.
type Origin struct {
	Tool        string
	WorkbenchID string
	Path        string // section-joined logical path
}

// Staging is one publication's objects: the Blocks of revision Revision
// of root Root that it may upload, and the ledger of operation Operation
// that names them.
type Staging struct {
	Operation [16]byte
	Root      [16]byte
	Revision  [16]byte
	Origin    Origin
	Blocks    []Block
}

// Planner cuts a stream of bytes into the blocks of one revision without
// keeping the bytes: the plan a ledger is written from before the bytes
// are read again to be uploaded.
type Planner struct {
	cut    cutter
	blocks []Block
}

// NewPlanner returns a Planner of blocks of revision rev of root, from
// physical index zero on.
func (s *Store) NewPlanner(root, rev [16]byte) *Planner {
	p := &Planner{}
	p.cut = cutter{size: s.opts.BlockSize, emit: func(b []byte) error {
		i := uint64(len(p.blocks))
		p.blocks = append(p.blocks, Block{
			Index:  i,
			Key:    BlockKey(s.layout, root, rev, i),
			Size:   uint64(len(b)),
			Digest: digest.Sum(b),
		})
		return nil
	}}
	return p
}

// Write adds the next bytes of the stream.
func (p *Planner) Write(b []byte) { _ = p.cut.write(b) }

// Blocks ends the stream and returns its blocks; nil for an empty stream.
func (p *Planner) Blocks() []Block {
	_ = p.cut.flush()
	return p.blocks
}

// Plan returns the blocks of revision rev of root that hold data.
func (s *Store) Plan(root, rev [16]byte, data []byte) []Block {
	p := s.NewPlanner(root, rev)
	p.Write(data)
	return p.Blocks()
}

// cutter cuts a stream of bytes into blocks of one size, the last one
// shorter. A whole block that one write holds is emitted as a slice of
// that write, without a copy; the rest is gathered in a fresh buffer.
type cutter struct {
	size int
	buf  []byte
	emit func([]byte) error
}

func (c *cutter) write(p []byte) error {
	for len(p) > 0 {
		if len(c.buf) == 0 && len(p) >= c.size {
			if err := c.emit(p[:c.size:c.size]); err != nil {
				return err
			}
			p = p[c.size:]
			continue
		}
		if c.buf == nil {
			// Sized to what is at hand, not to a whole block: most
			// bodies are far smaller than one.
			c.buf = make([]byte, 0, min(c.size, len(p)))
		}
		n := min(c.size-len(c.buf), len(p))
		c.buf = append(c.buf, p[:n]...)
		p = p[n:]
		if len(c.buf) == c.size {
			full := c.buf
			c.buf = nil
			if err := c.emit(full); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *cutter) flush() error {
	if len(c.buf) == 0 {
		return nil
	}
	last := c.buf
	c.buf = nil
	return c.emit(last)
}
