package latency

// Tracked returns the number of keys in the write-rate table.
func (b *Bucket) Tracked() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.lastWrite)
}
