// Package deploy holds no code: it tests what deploy/ ships (the Kubernetes
// manifests, the alert rules and the dashboard) against pistrad itself.
package deploy

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/bundle"
	"github.com/pistra/pistra/runtime/ledger/cluster/clustertest"
)

// namespace is the one the cluster overlay deploys to.
const namespace = "pistra"

// manifests are the objects a kustomization renders, each decoded into its
// Kubernetes API type.
type manifests struct {
	namespaces      []*corev1.Namespace
	serviceAccounts []*corev1.ServiceAccount
	services        map[string]*corev1.Service
	statefulSets    []*appsv1.StatefulSet
	pdbs            []*policyv1.PodDisruptionBudget
	configMaps      map[string]*corev1.ConfigMap
	secrets         map[string]*corev1.Secret
}

// decodeStrict decodes one rendered object into its API type, refusing a
// field the type does not have (a misspelt or misplaced key), and files it
// in m; a kind the manifests are not expected to hold is an error.
func (m *manifests) decodeStrict(doc []byte) error {
	var meta struct{ APIVersion, Kind string }
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return err
	}
	into := func(obj any) error { return yaml.UnmarshalStrict(doc, obj) }
	var err error
	switch meta.APIVersion + " " + meta.Kind {
	case "v1 Namespace":
		m.namespaces, err = decodeAppend(into, m.namespaces)
	case "v1 ServiceAccount":
		m.serviceAccounts, err = decodeAppend(into, m.serviceAccounts)
	case "apps/v1 StatefulSet":
		m.statefulSets, err = decodeAppend(into, m.statefulSets)
	case "policy/v1 PodDisruptionBudget":
		m.pdbs, err = decodeAppend(into, m.pdbs)
	case "v1 Service":
		err = decodeNamed(into, m.services)
	case "v1 ConfigMap":
		err = decodeNamed(into, m.configMaps)
	case "v1 Secret":
		err = decodeNamed(into, m.secrets)
	default:
		return fmt.Errorf("unexpected object %s %s", meta.APIVersion, meta.Kind)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", meta.Kind, err)
	}
	return nil
}

func decodeAppend[T any](into func(any) error, list []*T) ([]*T, error) {
	v := new(T)
	if err := into(v); err != nil {
		return list, err
	}
	return append(list, v), nil
}

// decodeNamed decodes a T and files it by its name, which must be new.
func decodeNamed[T any, P interface {
	*T
	GetName() string
}](into func(any) error, by map[string]*T) error {
	obj := P(new(T))
	if err := into(obj); err != nil {
		return err
	}
	if _, dup := by[obj.GetName()]; dup {
		return fmt.Errorf("%s twice", obj.GetName())
	}
	by[obj.GetName()] = obj
	return nil
}

// render builds the kustomization at dir (relative to deploy/k8s) with
// kustomize's own library, on an in-memory copy of deploy/k8s holding
// files under cluster/files, and decodes every object strictly.
func render(t *testing.T, dir string, files map[string][]byte) *manifests {
	t.Helper()
	mem := filesys.MakeFsInMemory()
	err := filepath.WalkDir("k8s", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return mem.WriteFile("/"+path, b)
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := mem.WriteFile("/k8s/cluster/files/"+name, b); err != nil {
			t.Fatal(err)
		}
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/k8s/"+dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	m := &manifests{services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	for _, r := range res.Resources() {
		doc, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		if err := m.decodeStrict(doc); err != nil {
			t.Errorf("%s: %v\n%s", dir, err, doc)
		}
	}
	return m
}

// userFiles are what a user puts in cluster/files: a signed bundle (the
// default policy's) and its public key, the cluster CA, each pod's
// certificate for its peer name, and the environment file.
func userFiles(t *testing.T) map[string][]byte {
	t.Helper()
	b, err := os.ReadFile("../gen/bundle.json")
	if err != nil {
		t.Fatal(err)
	}
	g, err := bundle.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	priv, pub := testkit.SigningKey(t)
	if err := bundle.Sign(g, priv); err != nil {
		t.Fatal(err)
	}
	signed, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"bundle.json": signed, "bundle.pub": pub,
		"pistrad.env": []byte("PISTRA_ADMIN_TOKEN=deploy-test-admin\nPISTRA_CLUSTER_SECRET=deploy-test-cluster\n" +
			"PISTRA_FAKE_OPENAI_KEY=deploy-test-openai\nPISTRA_FAKE_ANTHROPIC_KEY=deploy-test-anthropic\n"),
	}
	ca := clustertest.NewCA(t, "pistra cluster CA")
	for i := range 3 {
		pod := fmt.Sprintf("pistrad-%d", i)
		caFile, certFile, keyFile := ca.WriteFiles(t, t.TempDir(), peerName(pod))
		files["ca.crt"], files[pod+".crt"], files[pod+".key"] = readFile(t, caFile), readFile(t, certFile), readFile(t, keyFile)
	}
	return files
}

// peerName is the DNS name pod is reached by on the peers' Service.
func peerName(pod string) string {
	return pod + ".pistrad-peers." + namespace + ".svc.cluster.local"
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
