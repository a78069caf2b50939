# Final table: LS (endpoint-constrained) vs minimax (real floor, and bf16-rounded) for chosen interpretations
from core import *
from minimax import lp_minimax, best_floor
import sys
def ls_best(func, form, k, rnd, meas='cont', Li_list=np.arange(1,8.001,1/8)):
    best=(np.inf,None,None)
    for Li in Li_list:
        ct=fit(func,form,k,Li,'0L',nsamp=1501)
        pu=eval_raw(round_mode(ct,form,k,Li,rnd,func),form,UG)
        Lcs=np.arange(0.5,Li+1+1e-9,1/32)
        e=err_vs_clamp_m(func,pu,Lcs,meas); j=int(np.argmin(e))
        if e[j]<best[0]: best=(e[j],Li,Lcs[j])
    return best
def mm_fit(func, form, k, Li, Lc, npts=500):
    r,a=FUNCS[func]
    u=Lc*(1-np.cos(np.linspace(0,np.pi,npts)))/2
    B=design(u,form,k,Li)
    rows=[design(np.array([Li]),form,k,Li)[0]]; vals=[r(np.array([Li]))[0]]
    if form in ('u','y'): rows.append(design(np.array([0.]),form,k,Li)[0]); vals.append(r(np.array([0.]))[0])
    return lp_minimax(B,r(u),np.array(rows),np.array(vals))[0]
def mm_bf16_best(func, form, k, rnd, Lc0, meas='cont'):
    best=(np.inf,None,None)
    for Lc in np.arange(Lc0-0.5, Lc0+0.5+1e-9, 1/32):
        for Li in np.arange(np.floor((Lc-1)*8)/8, Lc+1.0+1e-9, 1/8):
            if Li<=0.5 or Lc>Li+1: continue
            ct=mm_fit(func,form,k,Li,Lc)
            pu=eval_raw(round_mode(ct,form,k,Li,rnd,func),form,UG)
            e=err_vs_clamp_m(func,pu,[Lc],meas)[0]
            if e<best[0]: best=(e,Li,Lc)
    return best
CH=[('sigmoid','u',3,'a',5.44,5.47),('sigmoid','u',3,'u',5.44,5.47),('tanh','u',4,'t',9.61,7.22),('tanh','u',4,'a',9.61,7.22),
    ('silu','y',4,'u',21.74,19.95),('silu','u',3,'a',21.74,19.95),('gelu','u',6,'a',1.06,0.50),('gelu','y',6,'z',1.06,0.50),('gelu','u',5,'a',1.06,0.50),
    ('dsig','u',4,'t',4.46,1.97),('dsig','u',4,'a',4.46,1.97),('dsig','y',5,'a',4.46,1.97),('dsig','y',6,'t',4.46,1.97)]
sel=sys.argv[1].split(',') if len(sys.argv)>1 else None
for func,form,k,rnd,pls,psol in CH:
    if sel and func not in sel: continue
    e,Li,Lc=ls_best(func,form,k,rnd)
    fl,Lf=best_floor(func,form,k)
    mb=mm_bf16_best(func,form,k,rnd,Lf)
    print(f'{func:7s} {form}{k} rnd={rnd:4s} LS {e*1e3:7.3f} ({Li:.3f},{Lc:.5f}) paper {pls} | MM real floor {fl*1e3:7.3f} (Lc={Lf:.4f}) | MM bf16[{rnd}] {mb[0]*1e3:7.3f} ({mb[1]:.3f},{mb[2]:.5f}) paper Sollya {psol}',flush=True)
