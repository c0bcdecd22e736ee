package state

import (
	"bufio"
	"bytes"
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
)

// sortMemory is how many bytes of encoded items a sorter holds before it
// writes them to a temporary file as a sorted run: a million records are
// sorted in a few megabytes of memory.
const sortMemory = 4 << 20

// sortSlack is room in a sorter's buffer beyond its limit, so the item
// that reaches the limit does not grow (copy) the buffer.
const sortSlack = 64 << 10

// sortBufs keeps sorters' buffers between sorts: a buffer allocated for
// every batch stage and grown by appending spent more time copying and
// faulting in pages than encoding into it.
type sortBufs struct {
	limit int
	pool  sync.Pool
}

func newSortBufs(limit int) *sortBufs {
	return &sortBufs{limit: limit, pool: sync.Pool{New: func() any {
		b := make([]byte, 0, limit+sortSlack)
		return &b
	}}}
}

// sorter gives back the items added to it in key order, or in Ord order
// and then key order, equal items in the order they were added. Items are
// held encoded (encodeItem) in one buffer that the garbage collector need
// not scan; beyond limit bytes they are written to a temporary file as a
// sorted run, unlinked as soon as it is made, so a killed process leaves
// nothing behind, and the runs are merged as they are read.
type sorter struct {
	dir   string
	bufs  *sortBufs
	byOrd bool
	// buf holds the encoded items and ents where each is.
	buf  []byte
	ents []sortEnt
	runs []*os.File
}

// sortEnt is an item in a sorter's buf: buf[off:end], its key at
// buf[key:end of key].
type sortEnt struct {
	ord            uint64
	off, key, kend int
}

func newSorter(dir string, bufs *sortBufs, byOrd bool) *sorter {
	return &sorter{dir: dir, bufs: bufs, byOrd: byOrd}
}

// compare orders two items by (ord, key) or key alone.
func (s *sorter) compare(ordA uint64, keyA []byte, ordB uint64, keyB []byte) int {
	if s.byOrd && ordA != ordB {
		return cmp.Compare(ordA, ordB)
	}
	return bytes.Compare(keyA, keyB)
}

func (s *sorter) add(it *Item) error {
	if s.buf == nil {
		s.buf = *s.bufs.pool.Get().(*[]byte)
	}
	off := len(s.buf)
	s.buf = encodeItem(s.buf, it)
	ord, key, kend := itemHead(s.buf[off:])
	s.ents = append(s.ents, sortEnt{ord: ord, off: off, key: off + key, kend: off + kend})
	if len(s.buf) >= s.bufs.limit {
		return s.spill()
	}
	return nil
}

// pending reports whether items were added and not yet given back.
func (s *sorter) pending() bool {
	return len(s.ents) > 0 || len(s.runs) > 0
}

// sortEnts sorts what is in memory; entries added earlier come first among equals.
func (s *sorter) sortEnts() {
	slices.SortFunc(s.ents, func(a, b sortEnt) int {
		if c := s.compare(a.ord, s.buf[a.key:a.kend], b.ord, s.buf[b.key:b.kend]); c != 0 {
			return c
		}
		return cmp.Compare(a.off, b.off)
	})
}

// spill writes the items in memory to a new run.
func (s *sorter) spill() error {
	s.sortEnts()
	f, err := os.CreateTemp(s.dir, ".eaglet-sort-*")
	if err != nil {
		return fmt.Errorf("sort: %w", err)
	}
	os.Remove(f.Name())
	s.runs = append(s.runs, f)
	w := bufio.NewWriterSize(f, 64<<10)
	for _, e := range s.ents {
		if _, err := w.Write(s.buf[e.off : e.off+itemLen(s.buf[e.off:])]); err != nil {
			return fmt.Errorf("sort: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("sort: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("sort: %w", err)
	}
	s.buf, s.ents = s.buf[:0], s.ents[:0]
	return nil
}

// each calls fn with every item added, in order, and empties the sorter.
// The item is valid until fn returns (one is reused, a record's worth of
// allocation less for every item); its fields are fn's to keep.
func (s *sorter) each(fn func(*Item) error) error {
	defer s.close()
	s.sortEnts()
	// The items in memory are the last run: runs are merged by position
	// among equals, so what was added first comes first.
	m := &runMerge{s: s}
	for i, f := range s.runs {
		c := &runCursor{r: bufio.NewReaderSize(f, 64<<10), run: i}
		if err := c.next(); err != nil {
			return err
		}
		if !c.done {
			m.cs = append(m.cs, c)
		}
	}
	if len(s.ents) > 0 {
		c := &runCursor{mem: s, run: len(s.runs)}
		c.next()
		m.cs = append(m.cs, c)
	}
	heap.Init(m)
	var it Item
	for m.Len() > 0 {
		c := m.cs[0]
		if err := decodeItem(c.cur, &it); err != nil {
			return err
		}
		if err := fn(&it); err != nil {
			return err
		}
		if err := c.next(); err != nil {
			return err
		}
		if c.done {
			heap.Pop(m)
		} else {
			heap.Fix(m, 0)
		}
	}
	return nil
}

// close drops what the sorter holds.
func (s *sorter) close() {
	for _, f := range s.runs {
		f.Close()
	}
	// A buffer an outsized item grew is left to the collector.
	if s.buf != nil && cap(s.buf) == s.bufs.limit+sortSlack {
		b := s.buf[:0]
		s.bufs.pool.Put(&b)
	}
	s.runs, s.buf, s.ents = nil, nil, nil
}

// runCursor is the head of one sorted run, read from a file or from the
// sorter's memory.
type runCursor struct {
	r   *bufio.Reader
	mem *sorter
	run int
	// cur is the encoded item at the head, ord and key its sort fields.
	cur  []byte
	ord  uint64
	key  []byte
	done bool
}

func (c *runCursor) next() error {
	if c.mem != nil {
		if len(c.mem.ents) == 0 {
			c.done = true
			return nil
		}
		e := c.mem.ents[0]
		c.mem.ents = c.mem.ents[1:]
		c.cur = c.mem.buf[e.off : e.off+itemLen(c.mem.buf[e.off:])]
	} else {
		var head [lenSize]byte
		if _, err := io.ReadFull(c.r, head[:]); errors.Is(err, io.EOF) {
			c.done = true
			return nil
		} else if err != nil {
			return fmt.Errorf("sort: read a run: %w", err)
		}
		n := int(binary.LittleEndian.Uint32(head[:]))
		c.cur = append(slices.Grow(c.cur[:0], lenSize+n), head[:]...)[:lenSize+n]
		if _, err := io.ReadFull(c.r, c.cur[lenSize:]); err != nil {
			return fmt.Errorf("sort: read a run: %w", err)
		}
	}
	ord, key, kend := itemHead(c.cur)
	c.ord, c.key = ord, c.cur[key:kend]
	return nil
}

// runMerge is a min-heap of run heads, ties broken by run so the merge is stable.
type runMerge struct {
	cs []*runCursor
	s  *sorter
}

func (m *runMerge) Len() int { return len(m.cs) }
func (m *runMerge) Less(i, j int) bool {
	a, b := m.cs[i], m.cs[j]
	if c := m.s.compare(a.ord, a.key, b.ord, b.key); c != 0 {
		return c < 0
	}
	return a.run < b.run
}
func (m *runMerge) Swap(i, j int) { m.cs[i], m.cs[j] = m.cs[j], m.cs[i] }
func (m *runMerge) Push(x any)    { m.cs = append(m.cs, x.(*runCursor)) }
func (m *runMerge) Pop() any {
	c := m.cs[len(m.cs)-1]
	m.cs = m.cs[:len(m.cs)-1]
	return c
}

// lenSize is the size of an encoded item's length.
const lenSize = 4

// encodeItem appends every field of it to b: the length of the rest (4
// bytes, little-endian), Ord and Key first (what items are sorted by),
// then strings as length and bytes, integers as varints, and Data's
// length plus one, 0 for nil (a pass-through row stores NULL, not an
// empty record).
func encodeItem(b []byte, it *Item) []byte {
	start := len(b)
	body := binary.AppendUvarint(append(b, 0, 0, 0, 0), it.Ord)
	for _, s := range []string{it.Key, it.Reason, it.FP, it.InHash, it.OutHash, it.Origin, it.Chash,
		it.InChash, it.Dataset, it.Retries, it.Finish, it.URL} {
		body = binary.AppendUvarint(body, uint64(len(s)))
		body = append(body, s...)
	}
	if it.Data == nil {
		body = binary.AppendUvarint(body, 0)
	} else {
		body = binary.AppendUvarint(body, uint64(len(it.Data))+1)
		body = append(body, it.Data...)
	}
	reused := int64(0)
	if it.Reused {
		reused = 1
	}
	for _, v := range []int64{int64(it.Status), int64(it.PromptTokens), int64(it.CompletionTokens),
		int64(it.Requests), it.Sent, it.FirstToken, it.Finished, reused} {
		body = binary.AppendVarint(body, v)
	}
	binary.LittleEndian.PutUint32(body[start:], uint32(len(body)-start-lenSize))
	return body
}

// itemLen is the length of the encoded item at the start of b.
func itemLen(b []byte) int {
	return lenSize + int(binary.LittleEndian.Uint32(b))
}

// itemHead reads the Ord of the encoded item b and where its key is.
func itemHead(b []byte) (ord uint64, key, kend int) {
	w := lenSize
	ord, w2 := binary.Uvarint(b[w:])
	l, w3 := binary.Uvarint(b[w+w2:])
	key = w + w2 + w3
	return ord, key, key + int(l)
}

// decodeItem reads what encodeItem wrote into it.
func decodeItem(b []byte, it *Item) error {
	d := decoder{b: b[lenSize:]}
	*it = Item{Ord: d.uvarint()}
	// The strings are cut from one copy of the bytes that hold them: an
	// allocation per item rather than one per field, of a dozen.
	fields := [...]*string{&it.Key, &it.Reason, &it.FP, &it.InHash, &it.OutHash, &it.Origin, &it.Chash,
		&it.InChash, &it.Dataset, &it.Retries, &it.Finish, &it.URL}
	var spans [len(fields)][2]int
	start := d.b
	for i := range fields {
		n := d.uvarint()
		from := len(start) - len(d.b)
		d.bytes(n)
		spans[i] = [2]int{from, from + int(n)}
	}
	if d.bad {
		return errors.New("sort: a run's item is cut short")
	}
	strs := string(start[:len(start)-len(d.b)])
	for i, p := range fields {
		*p = strs[spans[i][0]:spans[i][1]]
	}
	if l := d.uvarint(); l > 0 {
		it.Data = bytes.Clone(d.bytes(l - 1))
		if it.Data == nil {
			it.Data = []byte{}
		}
	}
	var ints [8]int64
	for i := range ints {
		ints[i] = d.varint()
	}
	it.Status, it.PromptTokens, it.CompletionTokens, it.Requests = int(ints[0]), int(ints[1]), int(ints[2]), int(ints[3])
	it.Sent, it.FirstToken, it.Finished, it.Reused = ints[4], ints[5], ints[6], ints[7] == 1
	if d.bad {
		return errors.New("sort: a run's item is cut short")
	}
	return nil
}

// decoder reads an encoded item; a read past its end sets bad.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes returns the next n bytes, a slice of the encoded item.
func (d *decoder) bytes(n uint64) []byte {
	if n > uint64(len(d.b)) {
		d.bad = true
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}
