//go:build !linux

package file

import (
	"errors"
	"os"
)

// rawFile is an object file, through os.File (on Linux, rawio_linux.go
// makes the system calls itself).
type rawFile struct{ f *os.File }

// Open flags, for openFile.
const (
	openRead   = os.O_RDONLY
	openCreate = os.O_WRONLY | os.O_CREATE | os.O_EXCL
)

func openFile(path string, flags int) (rawFile, error) {
	f, err := os.OpenFile(path, flags, 0o644)
	return rawFile{f}, err
}

func (f rawFile) stat() (fileInfo, error) {
	st, err := f.f.Stat()
	if err != nil {
		return fileInfo{}, err
	}
	return fileInfo{size: st.Size(), mod: st.ModTime(), regular: st.Mode().IsRegular()}, nil
}

func (f rawFile) readFull(buf []byte) error {
	_, err := f.f.ReadAt(buf, 0)
	return err
}

func (f rawFile) write(b []byte) error {
	_, err := f.f.Write(b)
	return err
}

func (f rawFile) sync() error  { return f.f.Sync() }
func (f rawFile) close() error { return f.f.Close() }

// openUnnamed reports that this system makes no unnamed files.
func openUnnamed(string) (rawFile, bool, error) { return rawFile{}, false, nil }

func (f rawFile) linkAt(string) error { return errors.ErrUnsupported }
