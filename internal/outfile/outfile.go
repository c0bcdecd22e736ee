// Package outfile writes the files eaglet makes outside its state store
// (merge's JSONL) so that a run never replaces a file eaglet did not write,
// a reader never sees half a file, the previous version stays beside the
// new one, and the temporary files of killed runs do not pile up.
//
// Beside each file it writes, eaglet keeps a marker, FILE.eaglet.json, that
// claims FILE (and FILE.prev, once there is a previous version). A file
// without a marker is someone else's: Write refuses to replace it unless
// told to.
package outfile

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// Suffixes of the files kept beside an output.
const (
	MarkerSuffix = ".eaglet.json"
	PrevSuffix   = ".prev"
)

// Marker is what eaglet records about a file it wrote.
type Marker struct {
	WrittenBy string `json:"written_by"`
	// Spec and Stage name what wrote the file, for a person who finds it.
	Spec  string `json:"spec,omitempty"`
	Stage string `json:"stage,omitempty"`
	// Prev is set when FILE.prev is eaglet's too (the version before).
	Prev      bool      `json:"prev"`
	WrittenAt time.Time `json:"written_at"`
}

const writtenBy = "eaglet"

// NotOursError is returned for an existing file eaglet did not write.
type NotOursError struct {
	Path string
}

func (e *NotOursError) Error() string {
	return fmt.Sprintf("%s exists and eaglet did not write it (no %s beside it)", e.Path, filepath.Base(markerPath(trimPrev(e.Path))))
}

func markerPath(path string) string { return path + MarkerSuffix }

func trimPrev(path string) string {
	if len(path) > len(PrevSuffix) && path[len(path)-len(PrevSuffix):] == PrevSuffix {
		return path[:len(path)-len(PrevSuffix)]
	}
	return path
}

// ReadMarker returns the marker beside path, or nil when there is none (or
// it is not eaglet's).
func ReadMarker(path string) (*Marker, error) {
	b, err := os.ReadFile(markerPath(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m Marker
	if json.Unmarshal(b, &m) != nil || m.WrittenBy != writtenBy {
		return nil, nil
	}
	return &m, nil
}

// Check returns a *NotOursError when writing path would replace a file
// eaglet did not write: path itself, or path.prev, where the version it
// replaces would go.
func Check(path string) error {
	m, err := ReadMarker(path)
	if err != nil {
		return err
	}
	if m == nil && exists(path) {
		return &NotOursError{Path: path}
	}
	if (m == nil || !m.Prev) && exists(path+PrevSuffix) {
		return &NotOursError{Path: path + PrevSuffix}
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// Options say who writes a file and whether a foreign file may be replaced.
type Options struct {
	Spec, Stage string
	// Overwrite replaces a file eaglet did not write (it is kept as
	// FILE.prev like any previous version).
	Overwrite bool
}

// Write makes path hold what fill writes: into a temporary file beside it,
// synced, then renamed over path, so a crash leaves the old file whole.
// The old file is kept as path.prev. Temporary files that killed runs left
// beside path are removed first.
func Write(path string, o Options, fill func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if !o.Overwrite {
		if err := Check(path); err != nil {
			return err
		}
	}
	if _, err := RemoveTemps(path); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file 0600, but the output is a data set for
	// other tools and people: 0644, as the other files eaglet writes.
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	w := bufio.NewWriterSize(tmp, 1<<20)
	err = fill(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	old, err := ReadMarker(path)
	if err != nil {
		return err
	}
	m := Marker{WrittenBy: writtenBy, Spec: o.Spec, Stage: o.Stage, WrittenAt: time.Now().UTC(), Prev: old != nil && old.Prev}
	if exists(path) {
		if err := keepPrev(path); err != nil {
			return fmt.Errorf("keep the previous version: %w", err)
		}
		m.Prev = true
	}
	// The marker goes first: a crash between it and the rename leaves a
	// marker claiming the old file, which was eaglet's or now is path.prev.
	if err := writeMarker(path, &m); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

// keepPrev makes path.prev a hard link to path (a copy where the file
// system has no links), so path stays in place until the rename replaces it.
func keepPrev(path string) error {
	prev := path + PrevSuffix
	if err := os.Remove(prev); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if os.Link(path, prev) == nil {
		return nil
	}
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(prev, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	return err
}

func writeMarker(path string, m *Marker) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := markerPath(path) + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, markerPath(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	// Some file systems cannot sync a directory; the rename is done either way.
	d.Sync()
	return nil
}

// RemoveTemps deletes the temporary files a killed Write left beside path
// (path.<digits>.tmp, as os.CreateTemp names them) and returns their names.
// Only one run uses a spec's store at a time, so none is still being written.
func RemoveTemps(path string) ([]string, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(base) + `\.[0-9]+\.tmp$`)
	var removed []string
	for _, e := range entries {
		if e.Type().IsRegular() && re.MatchString(e.Name()) {
			p := filepath.Join(dir, e.Name())
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return removed, err
			}
			removed = append(removed, p)
		}
	}
	return removed, nil
}

// Claim marks path (a directory a stage writes into) as eaglet's, so that
// a later validation lets it be written again; an existing marker is kept.
func Claim(path string, o Options) error {
	if m, err := ReadMarker(path); err != nil || m != nil {
		return err
	}
	return writeMarker(path, &Marker{WrittenBy: writtenBy, Spec: o.Spec, Stage: o.Stage, WrittenAt: time.Now().UTC()})
}

// Stamp identifies a file's version by size and modification time: cheap
// enough to check at every plan, and any rewrite changes it.
func Stamp(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d-%d", fi.Size(), fi.ModTime().UnixNano()), nil
}
