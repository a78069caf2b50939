import numpy as np
from scipy.optimize import linprog
from core import *

def lp_minimax(B, r, Aeq=None, beq=None):
    m, n = B.shape
    ones = np.ones((m,1))
    A = np.vstack([np.hstack([B,-ones]), np.hstack([-B,-ones])])
    b = np.concatenate([r,-r])
    c = np.zeros(n+1); c[-1]=1
    Ae = None if Aeq is None else np.hstack([Aeq, np.zeros((Aeq.shape[0],1))])
    res = linprog(c, A_ub=A, b_ub=b, A_eq=Ae, b_eq=beq, bounds=[(None,None)]*(n+1), method='highs')
    return res.x[:n], res.x[-1]

def floor(func, form, k, Lc, Li=None, ends='0', npts=1500):
    """minimax error on [0,Lc] for the form; if Li given, also exact value at Li. Returns (inner err, coeffs in t with L=Lc or Li)"""
    r, a = FUNCS[func]
    L = Li if Li is not None else Lc
    u = Lc*(1-np.cos(np.linspace(0,np.pi,npts)))/2
    B = design(u, form, k, L)
    rows=[];vals=[]
    if '0' in ends and form in ('u','y'):
        rows.append(design(np.array([0.]),form,k,L)[0]); vals.append(r(np.array([0.]))[0])
    if Li is not None:
        rows.append(design(np.array([Li]),form,k,L)[0]); vals.append(r(np.array([Li]))[0])
    Aeq = np.array(rows) if rows else None
    c, e = lp_minimax(B, r(u), Aeq, np.array(vals) if rows else None)
    return e, c

def tail(func, Lc):
    r,a=FUNCS[func]
    u = np.linspace(Lc, 16, 20000)
    return np.abs(a(u)-r(u)).max()

def best_floor(func, form, k, lo=1.0, hi=9.0, ends='0'):
    # golden-ish: coarse grid then refine
    grid = np.arange(lo, hi, 0.125)
    vals = [max(floor(func,form,k,L,ends=ends)[0], tail(func,L)) for L in grid]
    j = int(np.argmin(vals)); L0 = grid[j]
    fine = np.arange(L0-0.125, L0+0.125+1e-9, 1/64)
    vals2 = [max(floor(func,form,k,L,ends=ends)[0], tail(func,L)) for L in fine]
    j = int(np.argmin(vals2))
    return vals2[j], fine[j]

if __name__=='__main__':
    import sys
    for func,k0,pls,psol in [('sigmoid',3,5.44,5.47),('tanh',4,9.61,7.22),('silu',3,21.74,19.95),('gelu',5,1.06,0.50),('dsig',4,4.46,1.97)]:
        for form in (['u','uy'] if func in ('sigmoid','tanh') else ['u','y']):
            for k in [k0-1,k0,k0+1]:
                e,L = best_floor(func,form,k)
                print(f'{func:8s} form={form} k={k}: floor {e*1e3:8.3f}e-3 at Lc={L:.4f}   paper LS {pls} Sollya {psol}', flush=True)
