package cluster

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
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

// DefaultSetAsideRetention is --cluster-set-aside-retention's default: long
// enough for staff to look for what a lost leader never shipped.
const DefaultSetAsideRetention = 30 * 24 * time.Hour

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
	// SetAsideRetention is how long databases set aside are kept
	// (--cluster-set-aside-retention); 0: every one.
	SetAsideRetention time.Duration

	// TLS is how the node speaks TLS to etcd (--cluster-etcd-ca, -cert,
	// -key); nil: with the system's roots to https:// endpoints, not at all
	// to http:// ones.
	TLS *tls.Config
	// User and Password are the etcd user the node signs in as
	// (--cluster-etcd-user, the password from --cluster-etcd-password-file
	// or PETSTORE_CLUSTER_ETCD_PASSWORD); none: no user.
	User, Password string
	// Secret is the key that authenticates the nodes to each other: the
	// leader's record in etcd and every forwarded request
	// (--cluster-secret-file); nil only with --cluster-insecure-peers.
	Secret []byte
}

// EtcdPasswordVar holds the etcd user's password when
// --cluster-etcd-password-file is not given; it is read directly, as no
// flag takes a password (a flag would show it in the process list).
const EtcdPasswordVar = "PETSTORE_CLUSTER_ETCD_PASSWORD"

// MinSecret is the shortest --cluster-secret-file, in bytes.
const MinSecret = 32

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

	SetAsideRetention time.Duration

	EtcdCA, EtcdCert, EtcdKey string
	EtcdUser                  string
	EtcdPasswordFile          string
	SecretFile                string
	InsecurePeers             bool
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
	fs.DurationVar(&f.SetAsideRetention, "cluster-set-aside-retention", DefaultSetAsideRetention,
		"cluster mode: how long a database set aside when its node follows (a former leader's, which may hold writes never shipped) is kept in --dir's set-aside/; 0 keeps every one")
	fs.StringVar(&f.EtcdCA, "cluster-etcd-ca", "",
		"cluster mode: a PEM file of the CA that signed etcd's certificates, for https:// endpoints (default: the system's)")
	fs.StringVar(&f.EtcdCert, "cluster-etcd-cert", "",
		"cluster mode: a PEM file of this node's client certificate, for an etcd that takes clients with certificates alone (--client-cert-auth)")
	fs.StringVar(&f.EtcdKey, "cluster-etcd-key", "",
		"cluster mode: the PEM file of --cluster-etcd-cert's private key")
	fs.StringVar(&f.EtcdUser, "cluster-etcd-user", "",
		"cluster mode: the etcd user this node signs in as, for an etcd with authentication on; its password from --cluster-etcd-password-file or "+EtcdPasswordVar)
	fs.StringVar(&f.EtcdPasswordFile, "cluster-etcd-password-file", "",
		"cluster mode: a file holding --cluster-etcd-user's password (or the variable "+EtcdPasswordVar+")")
	fs.StringVar(&f.SecretFile, "cluster-secret-file", "",
		"cluster mode: a file holding the secret every node of the cluster shares (at least 32 bytes, readable by its owner and group alone), which authenticates the leader's record in etcd and every request a node forwards")
	fs.BoolVar(&f.InsecurePeers, "cluster-insecure-peers", false,
		"cluster mode: run without --cluster-secret-file: the nodes believe any leader named in etcd, and the leader any node forwarding to it")
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
	c := Config{Name: f.Name, NodeName: f.NodeName, AdvertiseURL: f.AdvertiseURL, TTL: f.TTL, Sync: f.Sync, SetAsideRetention: f.SetAsideRetention}
	if c.SetAsideRetention < 0 {
		return Config{}, fmt.Errorf("--cluster-set-aside-retention %s: a duration of 0 or more (0 keeps every database set aside)", c.SetAsideRetention)
	}
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
	if c.TLS, err = f.etcdTLS(c.Endpoints); err != nil {
		return Config{}, err
	}
	if c.User, c.Password, err = f.etcdUser(); err != nil {
		return Config{}, err
	}
	if c.Secret, err = f.secret(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// etcdTLS is the TLS configuration of --cluster-etcd-ca, -cert and -key;
// nil when none is given. Every endpoint must then be https://.
func (f Flags) etcdTLS(endpoints []string) (*tls.Config, error) {
	if f.EtcdCA == "" && f.EtcdCert == "" && f.EtcdKey == "" {
		return nil, nil
	}
	for _, e := range endpoints {
		if !strings.HasPrefix(e, "https://") {
			return nil, fmt.Errorf("--cluster-etcd: %q is not https://: --cluster-etcd-ca, --cluster-etcd-cert and --cluster-etcd-key speak TLS to etcd", e)
		}
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.EtcdCA != "" {
		pem, err := os.ReadFile(f.EtcdCA)
		if err != nil {
			return nil, fmt.Errorf("--cluster-etcd-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--cluster-etcd-ca %s holds no PEM certificate", f.EtcdCA)
		}
	}
	if (f.EtcdCert == "") != (f.EtcdKey == "") {
		return nil, fmt.Errorf("--cluster-etcd-cert and --cluster-etcd-key go together: the client certificate and its private key")
	}
	if f.EtcdCert != "" {
		cert, err := tls.LoadX509KeyPair(f.EtcdCert, f.EtcdKey)
		if err != nil {
			return nil, fmt.Errorf("--cluster-etcd-cert %s and --cluster-etcd-key %s: %w", f.EtcdCert, f.EtcdKey, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// etcdUser is --cluster-etcd-user and its password, from
// --cluster-etcd-password-file or else EtcdPasswordVar.
func (f Flags) etcdUser() (user, password string, err error) {
	password = os.Getenv(EtcdPasswordVar)
	if f.EtcdPasswordFile != "" {
		b, err := os.ReadFile(f.EtcdPasswordFile)
		if err != nil {
			return "", "", fmt.Errorf("--cluster-etcd-password-file: %w", err)
		}
		password = strings.TrimRight(string(b), "\r\n")
	}
	switch {
	case f.EtcdUser == "" && f.EtcdPasswordFile != "":
		return "", "", fmt.Errorf("--cluster-etcd-password-file is the password of --cluster-etcd-user, which is not given")
	case f.EtcdUser == "":
		return "", "", nil
	case password == "":
		return "", "", fmt.Errorf("--cluster-etcd-user %q needs its password: --cluster-etcd-password-file, or the variable %s", f.EtcdUser, EtcdPasswordVar)
	}
	return f.EtcdUser, password, nil
}

// secret reads --cluster-secret-file: at least MinSecret bytes (a final
// newline aside), in a file that users other than its owner and group can
// neither read nor write. It is nil with --cluster-insecure-peers alone.
func (f Flags) secret() ([]byte, error) {
	switch {
	case f.SecretFile != "" && f.InsecurePeers:
		return nil, fmt.Errorf("--cluster-secret-file and --cluster-insecure-peers contradict each other: give one")
	case f.InsecurePeers:
		return nil, nil
	case f.SecretFile == "":
		return nil, fmt.Errorf("--cluster-secret-file is needed in cluster mode: a file holding a secret of at least %d bytes that every node shares "+
			"(openssl rand -base64 48 > FILE; chmod 600 FILE), which authenticates the leader to the followers and the followers to the leader; "+
			"--cluster-insecure-peers runs without", MinSecret)
	}
	info, err := os.Stat(f.SecretFile)
	if err != nil {
		return nil, fmt.Errorf("--cluster-secret-file: %w", err)
	}
	if perm := info.Mode().Perm(); perm&0o007 != 0 {
		return nil, fmt.Errorf("--cluster-secret-file %s is open to every user of the machine (mode %04o): chmod o-rwx %s", f.SecretFile, perm, f.SecretFile)
	}
	b, err := os.ReadFile(f.SecretFile)
	if err != nil {
		return nil, fmt.Errorf("--cluster-secret-file: %w", err)
	}
	b = bytes.TrimRight(b, "\r\n")
	if len(b) < MinSecret {
		return nil, fmt.Errorf("--cluster-secret-file %s holds %d bytes, fewer than %d: openssl rand -base64 48 > %s", f.SecretFile, len(b), MinSecret, f.SecretFile)
	}
	return b, nil
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
