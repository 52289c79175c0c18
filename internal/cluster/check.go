package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Check tells whether etcd refuses this node, before it starts: its TLS
// (the node does not trust etcd's certificate, or etcd not the node's), its
// user or password, or its role's permissions on the cluster's keys. The
// error names the flag to change. An etcd that does not answer within ctx
// is no refusal: Run keeps trying.
func (n *Node) Check(ctx context.Context) error {
	if err := n.checkTLS(ctx); err != nil {
		return err
	}
	client, err := n.connect()
	if err != nil {
		return n.refusal(err)
	}
	// A transaction whose comparison always fails writes nothing, but etcd
	// checks the permissions of every operation in it: reading and writing
	// the cluster's keys.
	key := n.prefix("term")
	resp, err := client.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "<", 0)).Then(clientv3.OpPut(key, "")).
		Else(clientv3.OpGet(key), clientv3.OpGet(n.replicaKey())).Commit()
	if err != nil {
		return n.refusal(err)
	}
	if kv := firstKV(resp.Responses[1]); kv != nil {
		return n.sameReplica(string(kv.Value))
	}
	return nil
}

// replicaKey is the key where the cluster's leaders record its replica.
func (n *Node) replicaKey() string { return n.prefix("replica") }

// sameReplica says, naming both, when the cluster's replica (recorded) is
// not this node's: a node that followed or shipped elsewhere would promote
// a copy without the cluster's last writes, or write where no one follows.
func (n *Node) sameReplica(recorded string) error {
	if mine := n.cfg.Replica.String(); recorded != mine {
		return fmt.Errorf("--replica-url: this node replicates to %s, and cluster %q to %s (recorded in etcd by its leaders): every node of a cluster uses the same replica", mine, n.cfg.Name, recorded)
	}
	return nil
}

// refusal is err when it says etcd refuses this node's user, password or
// permissions, in words naming the flag; nil otherwise.
func (n *Node) refusal(err error) error {
	switch {
	case errors.Is(err, rpctypes.ErrAuthFailed):
		return fmt.Errorf("--cluster-etcd-user: etcd refuses user %q with this password (--cluster-etcd-password-file or %s)", n.cfg.User, EtcdPasswordVar)
	case (errors.Is(err, rpctypes.ErrPermissionDenied) || errors.Is(err, rpctypes.ErrUserEmpty)) && n.cfg.User == "":
		return fmt.Errorf("--cluster-etcd-user: etcd's authentication is on, and this node signs in as no user of it "+
			"(or as its --cluster-etcd-cert's common name, which may not read and write the keys under /%s/): give --cluster-etcd-user and its password", n.cfg.Name)
	case errors.Is(err, rpctypes.ErrPermissionDenied):
		return fmt.Errorf("--cluster-etcd-user: etcd's user %q may not read and write the keys under /%s/: "+
			"grant its role readwrite on them (etcdctl role grant-permission ROLE --prefix=true readwrite /%s/)", n.cfg.User, n.cfg.Name, n.cfg.Name)
	}
	return nil
}

// checkTLS asks each endpoint for etcd's /health over the node's TLS, and
// says whether one refused the connection, in words naming the flag: etcd's
// own client says only that the connection never became ready. An endpoint
// that does not answer says nothing.
func (n *Node) checkTLS(ctx context.Context) error {
	var cfg *tls.Config
	if n.cfg.TLS != nil {
		cfg = n.cfg.TLS.Clone()
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil, TLSClientConfig: cfg, DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	for _, endpoint := range n.cfg.Endpoints {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(endpoint, "/")+"/health", nil)
		if err != nil {
			return fmt.Errorf("--cluster-etcd: %q: %w", endpoint, err)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			continue
		}
		if req.URL.Scheme == "http" && speaksTLS(ctx, req.URL.Host) {
			return fmt.Errorf("--cluster-etcd: etcd at %s speaks TLS: give https:// endpoints (and --cluster-etcd-ca, --cluster-etcd-cert and --cluster-etcd-key)", endpoint)
		}
		var unverified *tls.CertificateVerificationError
		var notTLS tls.RecordHeaderError
		var op *net.OpError
		switch {
		case errors.As(err, &unverified):
			return fmt.Errorf("--cluster-etcd-ca: etcd's certificate at %s is not signed by a CA this node trusts (--cluster-etcd-ca, or the system's): %v", endpoint, unverified.Err)
		case errors.As(err, &notTLS):
			return fmt.Errorf("--cluster-etcd: etcd at %s does not speak TLS: give its http:// endpoint", endpoint)
		case errors.As(err, &op) && op.Op == "remote error":
			return fmt.Errorf("--cluster-etcd-cert: etcd at %s refuses this node's TLS connection (%v): it takes clients with a certificate signed by its CA, "+
				"given by --cluster-etcd-cert and --cluster-etcd-key", endpoint, op.Err)
		}
	}
	return nil
}

// speaksTLS says whether the server at hostport answers a TLS handshake:
// a plain HTTP request gets no answer from a TLS etcd. Nothing is sent
// over the connection, whose certificate is not checked.
func speaksTLS(ctx context.Context, hostport string) bool {
	d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}
	conn, err := d.DialContext(ctx, "tcp", hostport)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}
