package cluster

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"petstore/internal/replica"
)

// DefaultName is --cluster-name's default: the prefix of every key the
// cluster keeps in etcd.
const DefaultName = "petstore"

// DefaultTTL is --cluster-ttl's default, the leader's lease: a leader that
// dies is replaced within about this long.
const DefaultTTL = 5 * time.Second

// The bounds of --cluster-ttl. Under 2 s, a loaded machine's pause or an
// etcd election (1 s by default) ends the lease of a healthy leader; over
// 60 s, a dead leader keeps the service down for a minute.
const (
	MinTTL = 2 * time.Second
	MaxTTL = 60 * time.Second
)

// Config is cluster mode's configuration, parsed and checked (Flags.Config).
// Its zero value is cluster mode off.
type Config struct {
	Endpoints    []string      // --cluster-etcd: etcd's client URLs; none: cluster mode is off
	Name         string        // --cluster-name
	NodeName     string        // --node-name
	AdvertiseURL string        // --advertise-url, or made of --http
	Replica      replica.Root  // --replica-url
	TTL          time.Duration // --cluster-ttl
	Sync         bool          // --cluster-sync: a create is acknowledged once shipped
}

// Enabled says whether cluster mode is on.
func (c Config) Enabled() bool { return len(c.Endpoints) > 0 }

// Flags are cluster mode's serve flags as given; Config parses them.
type Flags struct {
	Etcd         string // comma-separated etcd endpoints; empty: cluster mode is off
	Name         string
	NodeName     string
	AdvertiseURL string
	ReplicaURL   string
	TTL          time.Duration
	Sync         bool
}

// AddFlags declares cluster mode's flags on fs, with f's fields as their
// values.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.Etcd, "cluster-etcd", "",
		"run as a node of a cluster: the etcd endpoints, comma-separated (http://10.0.0.1:2379,http://10.0.0.2:2379,http://10.0.0.3:2379); the nodes elect one leader, which alone writes")
	fs.StringVar(&f.Name, "cluster-name", DefaultName,
		"cluster mode: the cluster's name, the prefix of its keys in etcd and of its replica's path")
	host, _ := os.Hostname()
	fs.StringVar(&f.NodeName, "node-name", host,
		"cluster mode: this node's name, unique in the cluster")
	fs.StringVar(&f.AdvertiseURL, "advertise-url", "",
		"cluster mode: the URL at which the other nodes and the load balancer reach this node's --http (http://10.0.0.1:8090; default http:// and --http when it names a host)")
	fs.StringVar(&f.ReplicaURL, "replica-url", "",
		"cluster mode: where the leader ships its data and the followers restore it from (file:///path or s3://bucket/prefix)")
	fs.DurationVar(&f.TTL, "cluster-ttl", DefaultTTL,
		"cluster mode: the leader's lease in whole seconds, 2s to 60s; a leader that cannot renew it stops writing")
	fs.BoolVar(&f.Sync, "cluster-sync", false,
		"cluster mode: acknowledge a /v1 create only once it is shipped to the replica, so that a failover loses no acknowledged create (each create waits for a shipment, shared by the creates waiting with it)")
}

// Config parses and checks every value, and makes --advertise-url of
// httpAddr, serve's --http, when it is not given. Its error names the flag.
// Without --cluster-etcd, the other flags are not read (a single server
// under Litestream shares PETSTORE_REPLICA_URL with it), except that
// --cluster-sync is refused: it would promise what a single server cannot
// keep.
func (f Flags) Config(httpAddr string) (Config, error) {
	if f.Etcd == "" {
		if f.Sync {
			return Config{}, fmt.Errorf("--cluster-sync acknowledges a create once shipped to the cluster's replica: it needs --cluster-etcd")
		}
		return Config{}, nil
	}
	c := Config{Name: f.Name, NodeName: f.NodeName, AdvertiseURL: f.AdvertiseURL, TTL: f.TTL, Sync: f.Sync}
	for e := range strings.SplitSeq(f.Etcd, ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		if err := checkHTTPURL(e); err != nil {
			return Config{}, fmt.Errorf("--cluster-etcd: %q %v", e, err)
		}
		c.Endpoints = append(c.Endpoints, e)
	}
	if len(c.Endpoints) == 0 {
		return Config{}, fmt.Errorf("--cluster-etcd %q names no endpoint: give etcd's client URLs, comma-separated", f.Etcd)
	}
	if err := checkName(c.Name); err != nil {
		return Config{}, fmt.Errorf("--cluster-name %q %v", c.Name, err)
	}
	if err := checkName(c.NodeName); err != nil {
		return Config{}, fmt.Errorf("--node-name %q %v", c.NodeName, err)
	}
	if c.AdvertiseURL == "" {
		advertise, err := advertise(httpAddr)
		if err != nil {
			return Config{}, err
		}
		c.AdvertiseURL = advertise
	}
	if err := checkHTTPURL(c.AdvertiseURL); err != nil {
		return Config{}, fmt.Errorf("--advertise-url %q %v", c.AdvertiseURL, err)
	}
	if f.ReplicaURL == "" {
		return Config{}, fmt.Errorf("--replica-url is needed in cluster mode: the followers restore the leader's data from it")
	}
	var err error
	if c.Replica, err = replica.ParseURL(f.ReplicaURL); err != nil {
		return Config{}, fmt.Errorf("--replica-url: %w", err)
	}
	if c.TTL < MinTTL || c.TTL > MaxTTL || c.TTL%time.Second != 0 {
		return Config{}, fmt.Errorf("--cluster-ttl %s is out of bounds: whole seconds from %s to %s", c.TTL, MinTTL, MaxTTL)
	}
	return c, nil
}

// advertise is http:// and httpAddr when that names a host the other
// nodes can reach.
func advertise(httpAddr string) (string, error) {
	host, _, err := net.SplitHostPort(httpAddr)
	if ip := net.ParseIP(host); err != nil || host == "" || ip != nil && ip.IsUnspecified() {
		return "", fmt.Errorf("--advertise-url is needed: --http %q names no address the other nodes can reach", httpAddr)
	}
	return "http://" + httpAddr, nil
}

func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("is not an http:// or https:// URL with a host")
	}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("has more than a scheme, host and port")
	}
	return nil
}

// checkName holds a name that becomes one segment of etcd keys and of the
// replica's path.
func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("is empty")
	}
	if len(name) > 63 {
		return fmt.Errorf("is longer than 63 characters")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("may hold only letters, digits, '-', '_' and '.'")
		}
	}
	if name == "." || name == ".." {
		return fmt.Errorf("is not a name")
	}
	return nil
}
