package deploy

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/pistra/pistra/runtime/ledger"
)

// cluster renders the cluster overlay on userFiles and returns it with its
// one StatefulSet and that set's pistrad container.
func cluster(t *testing.T) (*manifests, *appsv1.StatefulSet, *corev1.Container) {
	t.Helper()
	m := render(t, "cluster", userFiles(t))
	if len(m.statefulSets) != 1 {
		t.Fatalf("%d StatefulSets, want 1", len(m.statefulSets))
	}
	sts := m.statefulSets[0]
	for i := range sts.Spec.Template.Spec.Containers {
		if c := &sts.Spec.Template.Spec.Containers[i]; c.Name == "pistrad" {
			return m, sts, c
		}
	}
	t.Fatal("no pistrad container")
	return nil, nil, nil
}

// flags reads a container's -name=value arguments.
func flags(t *testing.T, c *corev1.Container) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, a := range c.Args {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		if !ok || !strings.HasPrefix(a, "-") {
			t.Fatalf("argument %q: want -name=value", a)
		}
		out[name] = value
	}
	return out
}

// TestManifestsRender: the base renders alone and the cluster overlay
// renders with the objects it generates from the user's files, every one
// in the overlay's namespace.
func TestManifestsRender(t *testing.T) {
	base := render(t, "base", nil)
	if len(base.statefulSets) != 1 || len(base.services) != 2 || len(base.pdbs) != 1 || len(base.serviceAccounts) != 1 {
		t.Errorf("base: %d StatefulSets, %d Services, %d PDBs, %d ServiceAccounts; want 1, 2, 1, 1",
			len(base.statefulSets), len(base.services), len(base.pdbs), len(base.serviceAccounts))
	}
	m, sts, _ := cluster(t)
	if len(m.namespaces) != 1 || m.namespaces[0].Name != namespace || len(m.configMaps) != 1 || len(m.secrets) != 2 {
		t.Errorf("cluster: %d Namespaces, %d ConfigMaps, %d Secrets; want 1 (%s), 1, 2", len(m.namespaces), len(m.configMaps), len(m.secrets), namespace)
	}
	objs := []interface{ GetNamespace() string }{sts, m.pdbs[0], m.serviceAccounts[0]}
	for _, s := range m.services {
		objs = append(objs, s)
	}
	for _, c := range m.configMaps {
		objs = append(objs, c)
	}
	for _, s := range m.secrets {
		objs = append(objs, s)
	}
	for _, o := range objs {
		if o.GetNamespace() != namespace {
			t.Errorf("%T in namespace %q, want %q", o, o.GetNamespace(), namespace)
		}
	}
}

// TestStatefulSetIsARaftCluster: three pods on a headless peers Service
// that publishes pods before they are ready; each node is named for its
// pod and advertises its pod's DNS name on that Service, never an IP; the
// bootstrap voters are exactly the set's pods under those names; the raft
// port is one number in the flags, the container and the Service.
func TestStatefulSetIsARaftCluster(t *testing.T) {
	m, sts, c := cluster(t)
	f := flags(t, c)
	replicas := int(*sts.Spec.Replicas)
	if replicas != 3 || sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("replicas %d, pod management %q; want 3, Parallel", replicas, sts.Spec.PodManagementPolicy)
	}
	peers := m.services[sts.Spec.ServiceName]
	if peers == nil {
		t.Fatalf("serviceName %q: no such Service", sts.Spec.ServiceName)
	}
	if peers.Spec.ClusterIP != corev1.ClusterIPNone || !peers.Spec.PublishNotReadyAddresses {
		t.Errorf("Service %s: clusterIP %q, publishNotReadyAddresses %v; want None, true", peers.Name, peers.Spec.ClusterIP, peers.Spec.PublishNotReadyAddresses)
	}
	_, port, err := net.SplitHostPort(f["raft-listen"])
	if err != nil {
		t.Fatalf("-raft-listen: %v", err)
	}
	if p := containerPort(t, c, "raft"); strconv.Itoa(int(p)) != port || servicePort(t, peers, "raft") != intstr.FromString("raft") {
		t.Errorf("raft port: flag %s, container %d, peers Service targets %v", port, p, servicePort(t, peers, "raft"))
	}
	name := func(pod string) string {
		return pod + "." + sts.Spec.ServiceName + ".$(POD_NAMESPACE).svc.cluster.local:" + port
	}
	if f["node-id"] != "$(POD_NAME)" || f["raft-advertise"] != name("$(POD_NAME)") {
		t.Errorf("-node-id %q, -raft-advertise %q; want $(POD_NAME), %q", f["node-id"], f["raft-advertise"], name("$(POD_NAME)"))
	}
	if ref := fieldRef(c, "POD_NAME"); ref != "metadata.name" {
		t.Errorf("POD_NAME from %q, want metadata.name", ref)
	}
	if ref := fieldRef(c, "POD_NAMESPACE"); ref != "metadata.namespace" {
		t.Errorf("POD_NAMESPACE from %q, want metadata.namespace", ref)
	}
	voters, err := ledger.ParsePeers(f["peers"])
	if err != nil || len(voters) != replicas {
		t.Fatalf("-peers %q: %v, %d voters, want %d", f["peers"], err, len(voters), replicas)
	}
	for i, v := range voters {
		if pod := fmt.Sprintf("%s-%d", sts.Name, i); v.ID != pod || v.Addr != name(pod) {
			t.Errorf("voter %d: %s=%s, want %s=%s", i, v.ID, v.Addr, pod, name(pod))
		}
	}
	if len(sts.Spec.VolumeClaimTemplates) != 1 || !under(f["ledger-dir"], mountPath(c, sts.Spec.VolumeClaimTemplates[0].Name)) {
		t.Errorf("-ledger-dir %q is not on the volume claimed per pod", f["ledger-dir"])
	}
}

// TestServicesAndDisruptionBudget: both Services and the PDB select the
// set's pods; the clients' Service is a plain one on the public listener
// (so only ready pods get traffic); the PDB lets one pod go at a time,
// which leaves a quorum of voters.
func TestServicesAndDisruptionBudget(t *testing.T) {
	m, sts, c := cluster(t)
	pods := labels.Set(sts.Spec.Template.Labels)
	for name, s := range m.services {
		if len(s.Spec.Selector) == 0 || !labels.SelectorFromSet(s.Spec.Selector).Matches(pods) {
			t.Errorf("Service %s selects %v, not the pods (%v)", name, s.Spec.Selector, pods)
		}
	}
	client := m.services["pistrad"]
	if client == nil {
		t.Fatal("no clients' Service pistrad")
	}
	if client.Spec.ClusterIP == corev1.ClusterIPNone || client.Spec.PublishNotReadyAddresses {
		t.Errorf("clients' Service: clusterIP %q, publishNotReadyAddresses %v; want a ClusterIP Service of ready pods", client.Spec.ClusterIP, client.Spec.PublishNotReadyAddresses)
	}
	_, port, _ := net.SplitHostPort(flags(t, c)["listen"])
	if p := containerPort(t, c, "http"); strconv.Itoa(int(p)) != port || servicePort(t, client, "http") != intstr.FromString("http") {
		t.Errorf("public port: flag %s, container %d, Service targets %v", port, p, servicePort(t, client, "http"))
	}
	pdb := m.pdbs[0]
	sel := labels.SelectorFromSet(pdb.Spec.Selector.MatchLabels)
	if !sel.Matches(pods) || pdb.Spec.MaxUnavailable == nil {
		t.Fatalf("PDB selects %v, maxUnavailable %v", pdb.Spec.Selector, pdb.Spec.MaxUnavailable)
	}
	replicas, quorum := int(*sts.Spec.Replicas), int(*sts.Spec.Replicas)/2+1
	if left := replicas - pdb.Spec.MaxUnavailable.IntValue(); left < quorum || pdb.Spec.MaxUnavailable.IntValue() < 1 {
		t.Errorf("PDB maxUnavailable %v leaves %d of %d pods, quorum %d", pdb.Spec.MaxUnavailable, left, replicas, quorum)
	}
}

// TestPodHardened: non-root as the image's user, read-only root
// filesystem, no privilege escalation or capabilities, no service account
// token; the container's ports are the ones the image exposes.
func TestPodHardened(t *testing.T) {
	_, sts, c := cluster(t)
	pod, sc := sts.Spec.Template.Spec, c.SecurityContext
	user, exposed := imageUserAndPorts(t)
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot ||
		pod.SecurityContext.RunAsUser == nil || strconv.FormatInt(*pod.SecurityContext.RunAsUser, 10) != user {
		t.Errorf("pod security context %v, want non-root as the image's user %s", pod.SecurityContext, user)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the service account token is mounted")
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil ||
		*sc.AllowPrivilegeEscalation || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container security context %+v, want a read-only root, no escalation, every capability dropped", sc)
	}
	var ports []string
	for _, p := range c.Ports {
		ports = append(ports, strconv.Itoa(int(p.ContainerPort)))
	}
	if strings.Join(ports, " ") != strings.Join(exposed, " ") {
		t.Errorf("container ports %v, the image exposes %v", ports, exposed)
	}
}

// imageUserAndPorts reads the image recipe's USER and EXPOSE.
func imageUserAndPorts(t *testing.T) (string, []string) {
	t.Helper()
	b, err := os.ReadFile("image/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	user := regexp.MustCompile(`(?m)^USER (\d+)`).FindSubmatch(b)
	expose := regexp.MustCompile(`(?m)^EXPOSE (.+)$`).FindSubmatch(b)
	if user == nil || expose == nil {
		t.Fatal("image/Dockerfile has no USER or no EXPOSE")
	}
	var ports []string
	for _, p := range strings.Fields(string(expose[1])) {
		ports = append(ports, strings.TrimSuffix(p, "/tcp"))
	}
	return string(user[1]), ports
}

func containerPort(t *testing.T, c *corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("container has no port %q", name)
	return 0
}

func servicePort(t *testing.T, s *corev1.Service, name string) intstr.IntOrString {
	t.Helper()
	for _, p := range s.Spec.Ports {
		if p.Name == name {
			return p.TargetPort
		}
	}
	t.Fatalf("Service %s has no port %q", s.Name, name)
	return intstr.IntOrString{}
}

func fieldRef(c *corev1.Container, env string) string {
	for _, e := range c.Env {
		if e.Name == env && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			return e.ValueFrom.FieldRef.FieldPath
		}
	}
	return ""
}

// mountPath is where volume is mounted in c ("" when it is not).
func mountPath(c *corev1.Container, volume string) string {
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return m.MountPath
		}
	}
	return ""
}

// under reports whether path is dir or inside it.
func under(path, dir string) bool {
	return dir != "" && (path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/"))
}
