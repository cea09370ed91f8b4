package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// ErrTLS marks unusable TLS material.
var ErrTLS = errors.New("cluster: bad TLS material")

// TLSFiles name the PEM files of mutual TLS between the nodes' actor
// transports (protoactor remote over gRPC): this node's certificate and key,
// and the CA that signs every node's certificate. All three or none.
type TLSFiles struct {
	Cert, Key, CA string
}

// Register binds f to the --tls-cert, --tls-key and --tls-ca flags of fs.
func (f *TLSFiles) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Cert, "tls-cert", "", "mutual TLS for the actor transport: this node's certificate (PEM); with --tls-key and --tls-ca, on every node")
	fs.StringVar(&f.Key, "tls-key", "", "mutual TLS: this node's private key (PEM)")
	fs.StringVar(&f.CA, "tls-ca", "", "mutual TLS: the CA certificate (PEM) that signs every node's certificate")
}

// Enabled reports whether any file is named.
func (f TLSFiles) Enabled() bool { return f.Cert != "" || f.Key != "" || f.CA != "" }

// TLSConfigs loads the files and returns the server side (which requires a
// client certificate signed by the CA) and the client side (which presents
// this node's certificate and accepts a server whose chain leads to the CA).
// Nodes dial each other by address, so the client checks the chain, not a
// host name: the cluster's identity is "signed by our CA".
func TLSConfigs(f TLSFiles) (server, client *tls.Config, err error) {
	if f.Cert == "" || f.Key == "" || f.CA == "" {
		return nil, nil, fmt.Errorf("%w: need certificate, key and CA (got cert %q, key %q, ca %q)", ErrTLS, f.Cert, f.Key, f.CA)
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrTLS, err)
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrTLS, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, nil, fmt.Errorf("%w: %s holds no PEM certificate", ErrTLS, f.CA)
	}
	server = &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	}
	client = &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		// The chain is checked below against the CA; host names are not
		// part of a node's identity.
		InsecureSkipVerify: true,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verifyChain(raw, pool)
		},
	}
	return server, client, nil
}

// verifyChain checks that the peer's leaf certificate chains to pool.
func verifyChain(raw [][]byte, pool *x509.CertPool) error {
	if len(raw) == 0 {
		return fmt.Errorf("%w: peer sent no certificate", ErrTLS)
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, b := range raw {
		c, err := x509.ParseCertificate(b)
		if err != nil {
			return fmt.Errorf("%w: peer certificate: %v", ErrTLS, err)
		}
		certs[i] = c
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	if err != nil {
		return fmt.Errorf("%w: peer certificate: %v", ErrTLS, err)
	}
	return nil
}

// RemoteTLSOptions returns the protoactor remote options that put the
// node's actor transport under mutual TLS.
func RemoteTLSOptions(f TLSFiles) ([]remote.ConfigOption, error) {
	server, client, err := TLSConfigs(f)
	if err != nil {
		return nil, err
	}
	return []remote.ConfigOption{
		remote.WithServerOptions(grpc.Creds(credentials.NewTLS(server))),
		remote.WithDialOptions(grpc.WithTransportCredentials(credentials.NewTLS(client))),
	}, nil
}

// GenerateDevCerts writes a fresh private CA (ca.pem, ca-key.pem) and, for
// each name, a node certificate signed by it (NAME.pem, NAME-key.pem) into
// dir: ECDSA P-256, valid for 30 days, for trying a TLS cluster locally and
// for tests. Production clusters should use their own PKI.
func GenerateDevCerts(dir string, names ...string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "t2t dev CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "ca.pem"), "CERTIFICATE", caDER); err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, "ca-key.pem"), caKey); err != nil {
		return err
	}
	for i, name := range names {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour),
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			DNSNames:    []string{name, "localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		if err := writePEM(filepath.Join(dir, name+".pem"), "CERTIFICATE", der); err != nil {
			return err
		}
		if err := writeKey(filepath.Join(dir, name+"-key.pem"), key); err != nil {
			return err
		}
	}
	return nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der)
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
