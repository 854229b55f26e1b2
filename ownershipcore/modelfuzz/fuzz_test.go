/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package modelfuzz

import (
	"encoding/binary"
	"math/rand"
	"testing"
)

// bytesSource is a rand.Source that draws from a fuzzer's input (zeros
// once it is used up), so that the fuzzer's mutations of the input become
// changes of the sequence.
type bytesSource struct{ data []byte }

func (b *bytesSource) Int63() int64 { return int64(b.Uint64() >> 1) }

func (b *bytesSource) Uint64() uint64 {
	var buf [8]byte
	n := copy(buf[:], b.data)
	b.data = b.data[n:]
	return binary.LittleEndian.Uint64(buf[:])
}

func (b *bytesSource) Seed(int64) {}

// FuzzModel is the native Go fuzz target of the model: the input drives
// the choice of steps and intents (go test -fuzz FuzzModel).
func FuzzModel(f *testing.F) {
	r, err := NewRunner()
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, uint8(8))
	f.Add([]byte("fieldops hands each field back to its previous owner"), uint8(16))
	f.Fuzz(func(t *testing.T, data []byte, steps uint8) {
		seq := GenerateFrom(rand.New(&bytesSource{data: data}), int(steps%24))
		if err := r.Run(seq); err != nil {
			t.Fatalf("%v\n%s", err, Format(r.Shrink(seq)))
		}
	})
}
