package daemon

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/cluster"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/train"
)

// Dashboard is the live web page of a run, served by the coordinator's
// HTTP address: /ui is a self-contained page (inline CSS and script, no
// external assets) that polls /api/status, which returns the run's state
// from Redis (train.CollectStatus: stage, phase, versions, per-stage
// rates, configs and the engineer's rationale, checkpoints, the learner's
// flow: groups used, kept late and discarded by reason, time dispatch
// waited for the learner) plus the run's nodes with their load (the
// coordinator's account: units done, in flight, mean unit time, last
// heartbeat) and an LLM policy's sampling and device memory.
type Dashboard struct {
	st    *store.Store
	ps    *train.PolicyStore
	run   string
	nodes func() []cluster.NodeMeta
	// flow, fed by train.Options.OnFlow in this process, is fresher than
	// the flow record in Redis.
	flow atomic.Pointer[train.FlowRecord]
	// self is this process as a node of a one-process run (nil: the
	// nodes come from the cluster's membership, or none).
	self *selfNode
	// loads reads the coordinator's account of every node's load
	// (System.NodeLoads, once the run's actor system started: attach).
	loads atomic.Pointer[func() []actors.NodeLoad]
	// sampling reads the policy's generation scheduler, device its device
	// memory (nil: none).
	sampling atomic.Pointer[train.SamplingMeter]
	device   atomic.Pointer[train.DeviceMeter]
}

// selfNode is the process of a one-process run (train.LocalNode): its
// id, and the policy lag of the last unit its rollouts finished.
type selfNode struct {
	id  string
	lag atomic.Int64
}

// NewDashboard returns the live page of run in st; ps holds the run's
// flow record (nil: none but what this process's run reports). nodes
// lists the cluster's members (nil on a one-process run).
func NewDashboard(st *store.Store, ps *train.PolicyStore, run string, nodes func() []cluster.NodeMeta) *Dashboard {
	return &Dashboard{st: st, ps: ps, run: run, nodes: nodes}
}

// WithSampling makes the page show m's readings of the policy's
// generation scheduler (nil: none) and returns d.
func (d *Dashboard) WithSampling(m *train.SamplingMeter) *Dashboard {
	d.sampling.Store(m)
	return d
}

// WithDevice makes the page show m's readings of the policy's device
// memory (nil: none) and returns d.
func (d *Dashboard) WithDevice(m *train.DeviceMeter) *Dashboard {
	d.device.Store(m)
	return d
}

// waitDevice waits for a device memory reading in progress, so that none
// outlives the policy it reads.
func (d *Dashboard) waitDevice() {
	if m := d.device.Load(); m != nil {
		m.Wait()
	}
}

// attach makes the page show the load of sys's nodes.
func (d *Dashboard) attach(sys *actors.System) {
	if sys != nil {
		f := sys.NodeLoads
		d.loads.Store(&f)
	}
}

// local makes the page list this process (id node) as the run's one node,
// fed by onUnit.
func (d *Dashboard) local(node string) {
	d.self = &selfNode{id: node}
}

// onUnit records the policy lag of a unit this process's rollouts
// finished: lag versions behind the learner.
func (d *Dashboard) onUnit(lag int64) {
	if d.self != nil {
		d.self.lag.Store(lag)
	}
}

// onFlow is train.Options.OnFlow for the run this page shows.
func (d *Dashboard) onFlow(f train.FlowRecord) {
	if f.RunID == d.run {
		d.flow.Store(&f)
	}
}

// pageStatus is /api/status: the run's train.Status (its Nodes and
// Sampling filled by this process) and the time it was read.
type pageStatus struct {
	*train.Status
	NowUnix int64 `json:"now_unix_ms"`
}

// Handler serves the live page alone: /ui and /api/status (`t2t status
// --http`: any run in Redis, running or finished).
func (d *Dashboard) Handler() http.Handler {
	mux := http.NewServeMux()
	d.register(mux)
	return mux
}

func (d *Dashboard) register(mux *http.ServeMux) {
	mux.HandleFunc("/ui", d.page)
	mux.HandleFunc("/api/status", d.status)
}

func (d *Dashboard) status(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	out, err := d.read(ctx, time.Now())
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(out)
}

// read is /api/status at now.
func (d *Dashboard) read(ctx context.Context, now time.Time) (*pageStatus, error) {
	rep, err := train.CollectStatus(ctx, d.st, d.ps, d.run)
	if err != nil {
		return nil, err
	}
	if f := d.flow.Load(); f != nil {
		rep.SetFlow(f)
	}
	if nodes := d.nodeList(); nodes != nil { // else the run's record in Redis, if any
		rep.Nodes, rep.NodesUnixMs = nodes, 0
	}
	if m := d.sampling.Load(); m != nil {
		rep.Sampling = m.Status(now)
	}
	if m := d.device.Load(); m != nil {
		rep.Device = m.Status(now)
	}
	return &pageStatus{Status: rep, NowUnix: now.UnixMilli()}, nil
}

// nodeList is the run's nodes with their load: this process for a
// one-process run (every rollout is its own), else the cluster's members,
// then the nodes the coordinator leased units to that are members no more
// (left); nil where none is known (t2t status --http).
func (d *Dashboard) nodeList() []train.StatusNode {
	if d.self == nil && d.nodes == nil {
		return nil
	}
	var loads []actors.NodeLoad
	if f := d.loads.Load(); f != nil {
		loads = (*f)()
	}
	if s := d.self; s != nil {
		return []train.StatusNode{train.LocalNode(s.id, "this process", s.lag.Load(), loads)}
	}
	return train.ClusterNodes(memberNodes(d.nodes()), loads)
}

// memberNodes are the cluster's members as nodes of the run, without
// their load.
func memberNodes(ms []cluster.NodeMeta) []train.StatusNode {
	out := make([]train.StatusNode, len(ms))
	for i, m := range ms {
		out[i] = train.MemberNode(m)
	}
	return out
}

func (d *Dashboard) page(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	now := time.Now()
	var snap strings.Builder
	if rep, err := d.read(ctx, now); err != nil {
		snap.WriteString("status unavailable: " + err.Error())
	} else if err := train.WriteStatus(&snap, rep.Status, now); err != nil {
		snap.WriteString("status unavailable: " + err.Error())
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	page := strings.Replace(dashboardHTML, "<!--snapshot-->", html.EscapeString(snap.String()), 1)
	w.Write([]byte(page))
}

// dashboardHTML renders /api/status every 2 s without reloading: run
// state, the running stage's progress, learning curves over finished
// stages (inline SVG), the engineer's decisions, the config heat maps,
// failure categories, learner flow, sampling and device memory, and the
// nodes with their load. Without JavaScript it
// shows the server's snapshot (`t2t status` text) in #snap. poll()
// returns a promise that settles once its answer is shown; an answer
// older than the one shown is dropped.
const dashboardHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>t2t run</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.4em}
table{border-collapse:collapse;margin:4px 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}
th{background:#f3f3f3}td.l{text-align:left;max-width:40em}
#err{color:#b00}.k{color:#666}#warn{color:#b00;font-weight:bold}.run{color:#06c;font-weight:bold}
.js{display:none}details{margin:2px 0 8px}summary{cursor:pointer;color:#555}.hmp{display:inline-block;margin-right:14px;vertical-align:top}
</style></head><body>
<h1>t2t run <span id="run">…</span></h1>
<div id="err"></div>
<pre id="snap"><!--snapshot--></pre>
<div class="js" id="live">
<p id="state" class="k"></p><p id="running" class="run"></p>
<p id="flow" class="k"></p><p id="sampling" class="k"></p><p id="device" class="k"></p><p id="warn"></p>
<h2>Learning curves (finished stages; valid %)</h2>
<svg id="curves" width="680" height="280" viewBox="0 0 680 280" role="img" aria-label="learning curves"></svg>
<h2>Stages</h2>
<table id="stages"><thead><tr><th>stage</th><th>status</th><th>units</th><th>train episodes</th><th>train valid %</th><th>val valid / opt %</th><th>3 agents</th><th>4 agents</th><th>5 agents</th><th>updates</th><th>discarded groups</th><th>waited for learner</th><th>config</th></tr></thead><tbody></tbody></table>
<h2>Configuration over stages (rows: map size; columns: stage; outlined: the last change)</h2>
<div id="heat"></div>
<h2>Engineer's decisions</h2>
<div id="eng"></div>
<h2>Failure categories (failed checks per answers; the aggregates the engineer's F reads)</h2>
<table id="fail"><thead></thead><tbody></tbody></table>
<h2>Nodes</h2>
<table id="nodes"><thead><tr><th>name</th><th>id</th><th>pid</th><th>roles</th><th>address</th><th>capacity</th><th>units done</th><th>units in flight</th><th>mean unit time</th><th>leases lost</th><th>policy lag</th><th>last heartbeat</th></tr></thead><tbody></tbody></table>
</div>
<script>
var CATS=['parse','illegal_move','conflict','hole','out_of_bounds','goal','start','agent_count'];
function $(id){return document.getElementById(id)}
function pct(x){return (100*(x||0)).toFixed(1)}
function cell(t,cls){var td=document.createElement('td');td.textContent=t;if(cls)td.className=cls;return td}
function row(tb,vals){var tr=document.createElement('tr');vals.forEach(function(v){tr.appendChild(typeof v==='object'&&v?v:cell(v))});tb.appendChild(tr);return tr}
function sv(p,tag,attrs,text){var e=document.createElementNS('http://www.w3.org/2000/svg',tag);for(var k in attrs)e.setAttribute(k,attrs[k]);if(text!=null)e.textContent=text;p.appendChild(e);return e}
function curves(all){
  var svg=$('curves');while(svg.firstChild)svg.removeChild(svg.firstChild);
  var stages=all.filter(function(s){return !s.running}),W=680,H=280,L=40,B=50,n=Math.max(stages.length,2);
  function X(j){return L+(W-L-20)*j/(n-1)}function Y(v){return H-B-(H-B-10)*v}
  sv(svg,'line',{x1:L,y1:H-B,x2:W-10,y2:H-B,stroke:'#888'});sv(svg,'line',{x1:L,y1:10,x2:L,y2:H-B,stroke:'#888'});
  for(var y=0;y<=100;y+=25){sv(svg,'text',{x:4,y:Y(y/100)+4,'font-size':10},y+'%');sv(svg,'line',{x1:L,y1:Y(y/100),x2:W-10,y2:Y(y/100),stroke:'#eee'})}
  stages.forEach(function(s,j){sv(svg,'text',{x:X(j),y:H-B+14,'font-size':10,'text-anchor':'middle','class':'xlabel'},'stage '+s.stage)});
  if(!stages.length)sv(svg,'text',{x:L+20,y:H/2,'font-size':12,fill:'#666'},'no finished stage yet');
  var ev=function(k){return function(s){return (s.eval_paper||{})[k]&&s.eval_paper[k].episodes?s.eval_paper[k].valid:null}};
  var series=[['validation (2 agents)',function(s){return s.val.episodes?s.val.valid:null},'#333'],['benchmark 3 agents',ev(3),'#1f77b4'],['benchmark 4 agents',ev(4),'#ff7f0e'],['benchmark 5 agents',ev(5),'#2ca02c']];
  series.forEach(function(se,i){
    var pts=[],g=sv(svg,'g',{'class':'series'});
    stages.forEach(function(s,j){var v=se[1](s);if(v==null)return;pts.push(X(j).toFixed(1)+','+Y(v).toFixed(1));
      var c=sv(g,'circle',{cx:X(j).toFixed(1),cy:Y(v).toFixed(1),r:4,fill:se[2],'class':'pt','data-stage':s.stage});sv(c,'title',{},se[0]+', stage '+s.stage+': '+pct(v)+'% valid')});
    if(pts.length>1)sv(g,'polyline',{points:pts.join(' '),fill:'none',stroke:se[2],'stroke-width':2});
    sv(svg,'rect',{x:L+10+i*160,y:H-22,width:10,height:10,fill:se[2]});sv(svg,'text',{x:L+24+i*160,y:H-13,'font-size':11},se[0]);
  });
}
function secs(ns){return ((ns||0)/1e9).toFixed(1)+' s'}
function discards(f){if(!f)return '-';var n=f.discarded_stale+f.discarded_late_stage+f.discarded_duplicate;if(!n)return '0';
  var why=[];if(f.discarded_stale)why.push('stale '+f.discarded_stale);if(f.discarded_late_stage)why.push('late stage '+f.discarded_late_stage);
  if(f.discarded_duplicate)why.push('duplicate '+f.discarded_duplicate);return n+' ('+(100*n/Math.max(f.arrived,1)).toFixed(1)+'%: '+why.join(', ')+')'}
function flowLine(fr){var t=fr.total;
  return 'learner: '+t.updates+' updates; '+t.arrived+' groups arrived, '+t.used+' used ('+t.late_kept+' kept late), '+discards(t)+' discarded; dispatch waited '+secs(t.learner_wait_ns)+' for the learner (max policy lag '+(fr.max_lag<0?'off':fr.max_lag)+', staleness K '+fr.staleness_k+')'}
function stagesTable(d){
  var tb=document.querySelector('#stages tbody');tb.innerHTML='';
  (d.stages||[]).forEach(function(st){var e=st.eval_paper||{},r=st.running;
    var tr=row(tb,[st.stage,r?'running':'done',st.units,st.train.episodes,r?'running':pct(st.train.valid),r?'running':(st.val.episodes?pct(st.val.valid)+' / '+pct(st.val.optimal):'-')]);
    if(r){tr.className='run';tr.setAttribute('data-running','1')}
    [3,4,5].forEach(function(k){tr.appendChild(cell(!r&&e[k]?pct(e[k].valid)+' / '+pct(e[k].optimal):'-'))});
    [st.flow?st.flow.updates:'-',discards(st.flow),st.flow?secs(st.flow.learner_wait_ns):'-',st.config_version].forEach(function(v){tr.appendChild(cell(v))});
  });
}
function sizesOf(st){var m={};((st.config||{}).sizes||[]).forEach(function(z){m[z.size]=z});return m}
function heat(stages){
  var box=$('heat');box.innerHTML='';if(!stages.length)return;var last=stages.length-1,prev=last>0?sizesOf(stages[last-1]):null,cur=sizesOf(stages[last]),sizes={};
  stages.forEach(function(st){for(var k in sizesOf(st))sizes[k]=1});var ks=Object.keys(sizes).map(Number).sort(function(a,b){return a-b});
  [['data_ratio','data ratio',[44,160,44]],['hole_ratio','hole ratio',[214,39,40]],['wait_ratio','wait ratio',[31,119,180]]].forEach(function(p){
    var vals=[];stages.forEach(function(st){var m=sizesOf(st);ks.forEach(function(k){if(m[k])vals.push(m[k][p[0]])})});var mx=Math.max.apply(null,vals.concat([1e-9]));
    var C=34,R=18,Lw=50,div=document.createElement('div');div.className='hmp';box.appendChild(div);
    var svg=document.createElementNS('http://www.w3.org/2000/svg','svg');var w=Lw+C*stages.length+4,h=30+R*ks.length+4;svg.setAttribute('width',w);svg.setAttribute('height',h);svg.setAttribute('class','heat');svg.setAttribute('data-panel',p[0]);div.appendChild(svg);
    sv(svg,'text',{x:0,y:12,'font-size':12,'font-weight':'bold'},p[1]+' (max '+mx.toFixed(2)+')');
    stages.forEach(function(st,j){sv(svg,'text',{x:Lw+C*j+C/2,y:26,'font-size':10,'text-anchor':'middle'},'s'+st.stage)});
    ks.forEach(function(k,i){sv(svg,'text',{x:0,y:30+R*i+13,'font-size':10},'size '+k);
      stages.forEach(function(st,j){var z=sizesOf(st)[k],v=z?z[p[0]]:null,a=v==null?0:0.1+0.9*v/mx;
        var changed=j===last&&prev&&z&&prev[k]&&prev[k][p[0]]!==v;
        var rc=sv(svg,'rect',{x:Lw+C*j,y:30+R*i,width:C-2,height:R-2,fill:'rgba('+p[2].join(',')+','+a.toFixed(2)+')',stroke:changed?'#000':'none','stroke-width':changed?2:0,'class':'cell','data-size':k,'data-stage':st.stage});
        sv(rc,'title',{},p[1]+', size '+k+', stage '+st.stage+': '+(v==null?'-':v.toFixed(3))+(changed?' (changed from '+prev[k][p[0]].toFixed(3)+')':''));
        if(v!=null)sv(svg,'text',{x:Lw+C*j+C/2-1,y:30+R*i+12,'font-size':9,'text-anchor':'middle','pointer-events':'none'},v.toFixed(2))})});
  });
}
function engineer(stages){
  var box=$('eng');box.innerHTML='';
  stages.forEach(function(st,j){if(j===0&&!st.rationale)return;var prev=j>0?sizesOf(stages[j-1]):{},cur=sizesOf(st);
    var h=document.createElement('h3');h.style.fontSize='1em';h.textContent='stage '+st.stage+' config '+st.config_version+' by '+(st.proposer||'-');box.appendChild(h);
    var t=document.createElement('table');t.innerHTML='<thead><tr><th>size</th><th>data</th><th>hole</th><th>wait</th><th class="l">change</th></tr></thead><tbody></tbody>';box.appendChild(t);
    var tb=t.querySelector('tbody');Object.keys(cur).map(Number).sort(function(a,b){return a-b}).forEach(function(k){var z=cur[k],o=prev[k],ch=[];
      if(o)['data_ratio','hole_ratio','wait_ratio'].forEach(function(f){if(o[f]!==z[f])ch.push(f.replace('_ratio','')+' '+o[f].toFixed(2)+' → '+z[f].toFixed(2))});
      row(tb,[k,z.data_ratio.toFixed(3),z.hole_ratio.toFixed(2),z.wait_ratio.toFixed(2),cell(j===0?'initial':(ch.join(', ')||'no change'),'l')])});
    if(st.rationale){var dt=document.createElement('details');var sm=document.createElement('summary');sm.textContent='rationale';var pre=document.createElement('pre');pre.style.whiteSpace='pre-wrap';pre.textContent=st.rationale;dt.appendChild(sm);dt.appendChild(pre);box.appendChild(dt)}
  });
}
function failures(stages){
  var th=document.querySelector('#fail thead');th.innerHTML='';var hr=document.createElement('tr');['stage','split','agents','answers','invalid'].concat(CATS).forEach(function(c){var e=document.createElement('th');e.textContent=c;hr.appendChild(e)});th.appendChild(hr);
  var tb=document.querySelector('#fail tbody');tb.innerHTML='';
  stages.forEach(function(st){(st.failures||[]).forEach(function(f){if(!f.episodes)return;
    var tr=row(tb,[st.stage+(st.running?' (running)':''),f.split,f.agents,f.episodes,f.invalid+' ('+pct(f.invalid/f.episodes)+'%)']);
    tr.setAttribute('data-stage',st.stage);tr.setAttribute('data-split',f.split);tr.setAttribute('data-agents',f.agents);
    CATS.forEach(function(c){var n=(f.categories||{})[c]||0;var td=cell(n?n+' ('+pct(n/f.episodes)+'%)':'0');td.setAttribute('data-cat',c);td.setAttribute('data-n',n);tr.appendChild(td)})})});
}
function dur(ns){return !ns?'-':ns<1e9?(ns/1e6).toFixed(0)+' ms':(ns/1e9).toFixed(1)+' s'}
function gib(b){return (b/1073741824).toFixed(2)+' GiB'}
function nodes(d){
  var nb=document.querySelector('#nodes tbody');nb.innerHTML='';
  (d.nodes||[]).forEach(function(n){var l=n.load;
    var tr=row(nb,[n.name||'-',n.id,n.pid||'-',(n.roles||[]).join(','),n.address||'-',n.capacity||'-']);tr.setAttribute('data-node',n.id);
    [['units_done',l?l.units_done:'-'],['in_flight',l?l.units_in_flight:'-'],['mean_unit',l?dur(l.mean_unit_time_ns):'-'],['lost',l?l.lost_leases:'-'],
     ['lag',n.pid?(n.policy_lag||0):'-'],['heartbeat',l&&l.last_heartbeat_unix_ms?((d.now_unix_ms-l.last_heartbeat_unix_ms)/1000).toFixed(1)+' s ago'+(l.left?' (left)':''):'-']
    ].forEach(function(c){var td=cell(c[1]);td.setAttribute('data-col',c[0]);tr.appendChild(td)})});
}
function device(v){if(!v)return '';var s='device memory: ';if(v.error)return s+'not known: '+v.error;if(!v.read_unix_ms)return s+'not read yet';
  return s+gib(v.device_memory_bytes)+(v.peak_device_memory_bytes?' (peak '+gib(v.peak_device_memory_bytes)+')':'')+' '+v.memory_source+' on '+v.device}
function render(d){
  $('snap').style.display='none';$('live').className='';
  $('run').textContent=d.run;$('err').textContent='';
  var s=d.state||{},stages=d.stages||[];
  $('state').textContent='stage '+s.stage+' · phase '+s.phase+' · policy version '+s.policy_version+' · config '+(s.config_version||'-');
  var run=stages.filter(function(x){return x.running})[0];
  $('running').textContent=run?'stage '+run.stage+' running ('+s.phase+'): '+run.units+' training units applied, '+run.train.episodes+' training episodes and '+run.val.episodes+' validation episodes so far':'';
  var fr=d.flow;$('flow').textContent=fr?flowLine(fr):'';
  var sm=d.sampling;$('sampling').textContent=sm?'sampling: '+sm.rows_per_decode_step.toFixed(2)+' rows per decode step, '+(sm.tokens_per_s_over_ns?sm.tokens_per_s.toFixed(1)+' tokens/s (over '+secs(sm.tokens_per_s_over_ns)+')':'tokens/s not measured yet')+'; '+sm.tokens+' tokens in '+sm.steps+' decode steps for '+sm.requests+' requests, mean queue wait '+(sm.mean_queue_wait_ns/1e6).toFixed(0)+' ms; slots '+sm.slots_in_use+' of '+sm.slots+' in use, '+sm.queued+' queued':'';
  $('device').textContent=device(d.device);
  var share=fr&&fr.total.arrived?(fr.total.discarded_stale+fr.total.discarded_late_stage+fr.total.discarded_duplicate)/fr.total.arrived:0;
  $('warn').textContent=share>0.05?'Warning: '+(100*share).toFixed(1)+'% of the groups were discarded (more than 5%): rollout work is wasted.':'';
  stagesTable(d);curves(stages);heat(stages);engineer(stages);failures(stages);nodes(d);
}
var asked=0,shown=0;
function poll(){var n=++asked;return fetch('/api/status',{cache:'no-store'}).then(function(r){return r.json()}).then(function(d){if(n<shown)return;shown=n;if(d.error){$('err').textContent=d.error}else{render(d)}}).catch(function(e){if(n>=shown)$('err').textContent=String(e)})}
poll();setInterval(poll,2000);
</script></body></html>`
