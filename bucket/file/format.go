package file

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"

	"github.com/cairnstore/cairn/bucket"
)

// An object file is a header followed by the body:
//
//	offset size
//	0      8    magic "cairnobj"
//	8      1    format version (1)
//	9      3    zero
//	12     16   version token
//	28     8    body length, big-endian
//	36     4    CRC-32C (Castagnoli) of the body, big-endian
//	40     4    CRC-32C of bytes 0..40, big-endian
const (
	headerLen     = 44
	formatVersion = 1
	magic         = "cairnobj"
	tokenLen      = 16
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is the decoded header of an object file.
type header struct {
	token [tokenLen]byte
	size  int64
	crc   uint32
}

func newToken() [tokenLen]byte {
	var t [tokenLen]byte
	rand.Read(t[:]) // never fails
	return t
}

func (h header) version() bucket.Version { return bucket.Version(hex.EncodeToString(h.token[:])) }

func (h header) checksum() string { return fmt.Sprintf("crc32c:%08x", h.crc) }

// encode returns the header for body under token.
func encode(token [tokenLen]byte, body []byte) (header, []byte) {
	h := header{token: token, size: int64(len(body)), crc: crc32.Checksum(body, castagnoli)}
	b := make([]byte, headerLen)
	copy(b, magic)
	b[8] = formatVersion
	copy(b[12:28], h.token[:])
	binary.BigEndian.PutUint64(b[28:36], uint64(h.size))
	binary.BigEndian.PutUint32(b[36:40], h.crc)
	binary.BigEndian.PutUint32(b[40:44], crc32.Checksum(b[:40], castagnoli))
	return h, b
}

// decode parses a header and checks it against the object file's size.
// Damage is reported as bucket.ErrIntegrity.
func decode(b []byte, fileSize int64) (header, error) {
	if len(b) < headerLen || fileSize < headerLen {
		return header{}, fmt.Errorf("%w: object file of %d bytes is shorter than its header", bucket.ErrIntegrity, fileSize)
	}
	if got, want := crc32.Checksum(b[:40], castagnoli), binary.BigEndian.Uint32(b[40:44]); got != want {
		return header{}, fmt.Errorf("%w: header checksum %08x, want %08x", bucket.ErrIntegrity, got, want)
	}
	if string(b[:8]) != magic {
		return header{}, fmt.Errorf("%w: not an object file (magic %q)", bucket.ErrIntegrity, b[:8])
	}
	if b[8] != formatVersion {
		return header{}, fmt.Errorf("object file format %d, this build reads %d", b[8], formatVersion)
	}
	var h header
	copy(h.token[:], b[12:28])
	h.size = int64(binary.BigEndian.Uint64(b[28:36]))
	h.crc = binary.BigEndian.Uint32(b[36:40])
	if h.size < 0 || h.size != fileSize-headerLen {
		return header{}, fmt.Errorf("%w: body of %d bytes, header says %d", bucket.ErrIntegrity, fileSize-headerLen, h.size)
	}
	return h, nil
}
