package main

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// floodTarget is createPet while guests flood realtime from one address, as
// issue 50's attack did: floodStreams streams, each asking for PocketBase's
// maxima (1,000 topics of 2,500 characters) and, refused, for a guest's
// bounds (50 topics of 500). The topics name pets, so that every create is
// broadcast. The streams the server admits stay open for the run and close
// after it.
const floodTarget = "createFlood"

const floodStreams = 100

// The bounds tried, PocketBase's and then a guest's (internal/realtime).
var floodBounds = []struct{ topics, length int }{{1000, 2500}, {50, 500}}

// Goals of the flood: its createPet median over createPet's without it,
// and how much the server's RSS grows from before the flood to after its
// run.
const (
	maxFloodP50       = 1.10
	maxFloodRSSGrowth = 20 << 20
)

// flood is the open streams of a flood.
type flood struct {
	streams   []*stream
	rssBefore int64 // the server's RSS before they opened
}

func (f *flood) close() {
	for _, st := range f.streams {
		st.close()
	}
}

// openFlood opens the flood on the server at baseURL, whose RSS rss reads.
// It runs before the run's CPU time is read: the subscriptions' parsing is
// the flood's cost, not the creates'.
func openFlood(baseURL string, rss func() (int64, error)) (*flood, error) {
	before, err := rss()
	if err != nil {
		return nil, err
	}
	f := &flood{rssBefore: before}
	refused, subscribed := 0, map[int]int{}
	for range floodStreams {
		st, err := openStream(baseURL)
		if errors.Is(err, errRefused) {
			refused++
			continue
		}
		if err != nil {
			f.close()
			return nil, err
		}
		f.streams = append(f.streams, st)
		go func() {
			for st.lines.Scan() {
			}
		}()
		for _, b := range floodBounds {
			status, err := st.subscribe(baseURL, "", floodTopics(b.topics, b.length))
			if err != nil {
				f.close()
				return nil, err
			}
			if status == http.StatusNoContent {
				subscribed[b.topics]++
				break
			}
		}
	}
	fmt.Printf("%s: %d streams open (%d refused); %d subscribed to 1,000 topics, %d to 50\n",
		floodTarget, len(f.streams), refused, subscribed[1000], subscribed[50])
	return f, nil
}

// floodTopics is n topics of length characters that name pets, none of
// them one that exists.
func floodTopics(n, length int) []string {
	topics := make([]string, n)
	for i := range topics {
		t := fmt.Sprintf("pets/flood%d?", i)
		topics[i] = t + strings.Repeat("x", length-len(t))
	}
	return topics
}
