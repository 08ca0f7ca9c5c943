//go:build linux

package file

import (
	"errors"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// rawFile is an object file opened with the system calls themselves.
// os.File registers every regular file it opens with the runtime's
// poller, which refuses it, at five extra system calls an open (fcntl to
// set and clear non-blocking mode, epoll_ctl), and a small put opens
// four to eight files (docs/performance.md, "Fewer system calls a put").
type rawFile struct {
	fd   int
	path string
}

// Open flags, for openFile.
const (
	openRead   = unix.O_RDONLY
	openCreate = unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL
)

func pathErr(op, path string, err error) error {
	return &os.PathError{Op: op, Path: path, Err: err}
}

// retry repeats a system call interrupted by a signal.
func retry(call func() error) error {
	for {
		if err := call(); err != unix.EINTR {
			return err
		}
	}
}

func openFD(path string, flags int, perm uint32) (int, error) {
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Open(path, flags|unix.O_CLOEXEC, perm)
		return err
	})
	if err != nil {
		return -1, pathErr("open", path, err)
	}
	return fd, nil
}

func openFile(path string, flags int) (rawFile, error) {
	fd, err := openFD(path, flags, 0o644)
	return rawFile{fd: fd, path: path}, err
}

func (f rawFile) stat() (fileInfo, error) {
	var st unix.Stat_t
	if err := retry(func() error { return unix.Fstat(f.fd, &st) }); err != nil {
		return fileInfo{}, pathErr("fstat", f.path, err)
	}
	return fileInfo{
		size:    st.Size,
		mod:     time.Unix(st.Mtim.Unix()),
		regular: st.Mode&unix.S_IFMT == unix.S_IFREG,
	}, nil
}

// readFull reads len(buf) bytes from offset 0.
func (f rawFile) readFull(buf []byte) error {
	for off := 0; off < len(buf); {
		var n int
		err := retry(func() (err error) {
			n, err = unix.Pread(f.fd, buf[off:], int64(off))
			return err
		})
		if err != nil {
			return pathErr("read", f.path, err)
		}
		if n == 0 {
			return pathErr("read", f.path, errShortRead)
		}
		off += n
	}
	return nil
}

func (f rawFile) write(b []byte) error {
	for len(b) > 0 {
		var n int
		err := retry(func() (err error) {
			n, err = unix.Write(f.fd, b)
			return err
		})
		if err != nil {
			return pathErr("write", f.path, err)
		}
		b = b[n:]
	}
	return nil
}

func (f rawFile) sync() error {
	if err := retry(func() error { return unix.Fsync(f.fd) }); err != nil {
		return pathErr("fsync", f.path, err)
	}
	return nil
}

func (f rawFile) close() error {
	if err := unix.Close(f.fd); err != nil {
		return pathErr("close", f.path, err)
	}
	return nil
}

// openUnnamed opens a new file in dir that has no name (O_TMPFILE) until
// linkAt gives it one, so that making it takes no lock on dir and a
// crash leaves nothing. ok is false where the file system or the kernel
// makes no such file, or /proc, through which linkAt names it, is not
// mounted.
func openUnnamed(dir string) (f rawFile, ok bool, err error) {
	if !procFD {
		return rawFile{}, false, nil
	}
	fd, err := openFD(dir, unix.O_WRONLY|unix.O_TMPFILE, 0o644)
	if err != nil {
		var errno unix.Errno
		if errors.As(err, &errno) && (errno == unix.EOPNOTSUPP || errno == unix.EISDIR || errno == unix.EINVAL) {
			return rawFile{}, false, nil
		}
		return rawFile{}, false, err
	}
	return rawFile{fd: fd, path: dir + " (unnamed)"}, true, nil
}

// linkAt gives the unnamed file f the name path, failing if path exists.
func (f rawFile) linkAt(path string) error {
	proc := "/proc/self/fd/" + strconv.Itoa(f.fd)
	if err := unix.Linkat(unix.AT_FDCWD, proc, unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW); err != nil {
		return &os.LinkError{Op: "link", Old: f.path, New: path, Err: err}
	}
	return nil
}

// procFD is whether /proc/self/fd is there to name unnamed files by.
var procFD = func() bool {
	_, err := os.Stat("/proc/self/fd")
	return err == nil
}()
