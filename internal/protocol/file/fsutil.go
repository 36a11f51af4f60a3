package file

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"wharf/internal/durable"
)

// uniqueToken is a short, time-ordered random name part.
func uniqueToken() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}

// exists reports whether something (of any type, links not followed) is at p.
func exists(p string) (bool, error) {
	_, err := os.Lstat(p)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

// freeName returns dst, or dst with a unique suffix when something is there already, so
// a move never replaces a file.
func freeName(dst string) (string, error) {
	ok, err := exists(dst)
	if err != nil {
		return "", err
	}
	if !ok {
		return dst, nil
	}
	for range 5 {
		alt := dst + "." + uniqueToken()
		ok, err := exists(alt)
		if err != nil {
			return "", err
		}
		if !ok {
			return alt, nil
		}
	}
	return "", fmt.Errorf("no free name beside %s", filepath.Base(dst))
}

// moveFile renames src to dst, creating dst's directory; across file systems it copies,
// syncs and then removes src.
func moveFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
		return err
	}
	err := os.Rename(src, dst)
	if err == nil || !errors.Is(err, syscall.EXDEV) {
		return err
	}
	return copyAcross(src, dst)
}

func copyAcross(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", filepath.Base(src))
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".wharf-tmp-*")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := io.Copy(tmp, in); err != nil {
		return err
	}
	if err := tmp.Chmod(info.Mode().Perm()); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return err
	}
	done = true
	if err := durable.SyncDir(filepath.Dir(dst)); err != nil {
		return err
	}
	return os.Remove(src)
}

// writeFileSync writes a small file and syncs it.
func writeFileSync(name string, data []byte, perm fs.FileMode) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// errText is the innermost message of a file-system error: the operation and path of an
// *fs.PathError are dropped, the caller names what it was doing.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	return err.Error()
}

// groupSync syncs directories with group commit: concurrent deliveries into one directory
// share a directory sync instead of each paying for its own. A caller is satisfied only
// by a sync that started after it called, so its rename is covered.
type groupSync struct {
	// op is the flush, durable.SyncDir when nil.
	op   func(dir string) error
	mu   sync.Mutex
	dirs map[string]*dirSync
}

type dirSync struct {
	cond      *sync.Cond
	running   bool
	started   uint64 // syncs begun
	completed uint64 // syncs finished
	failedAt  uint64 // the last sync that failed, with err
	err       error
	waiters   int
}

// Sync returns once a sync of dir that began after the call has finished.
func (g *groupSync) Sync(dir string) error {
	g.mu.Lock()
	if g.dirs == nil {
		g.dirs = map[string]*dirSync{}
	}
	st := g.dirs[dir]
	if st == nil {
		st = &dirSync{cond: sync.NewCond(&g.mu)}
		g.dirs[dir] = st
	}
	st.waiters++
	ticket := st.started + 1
	for st.completed < ticket {
		if st.running {
			st.cond.Wait()
			continue
		}
		st.running = true
		st.started++
		n := st.started
		g.mu.Unlock()
		op := g.op
		if op == nil {
			op = durable.SyncDir
		}
		err := op(dir)
		g.mu.Lock()
		st.completed, st.running = n, false
		if err != nil {
			st.failedAt, st.err = n, err
		}
		st.cond.Broadcast()
	}
	var err error
	if st.failedAt >= ticket {
		err = st.err
	}
	st.waiters--
	if st.waiters == 0 && !st.running {
		delete(g.dirs, dir) // directories come and go; keep only the busy ones
	}
	g.mu.Unlock()
	return err
}
